// Small helpers shared by the screens.
import { ApiError, SupportUnavailable } from '@sealpost/sdk';

import { describeApiError, ERROR_MESSAGES } from './errors';

/** The API is the page's own origin (it serves the page at /app/). */
export const BASE_URL = window.location.origin;

/** Every error shown to a person, in words (src/errors.ts maps each API code). */
export function describe(e: unknown): string {
  if (e instanceof ApiError) return describeApiError(e);
  if (e instanceof SupportUnavailable) return ERROR_MESSAGES.support_unavailable;
  if (e instanceof TypeError && /fetch|network/i.test(e.message)) return 'The service cannot be reached. Check your connection and try again.';
  return e instanceof Error ? e.message : String(e);
}
