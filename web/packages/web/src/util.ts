// Small helpers shared by the screens.
import { ApiError } from '@sealpost/sdk';

/** The API is the page's own origin (it serves the page at /app/). */
export const BASE_URL = window.location.origin;

export function describe(e: unknown): string {
  if (e instanceof ApiError) return `${e.message}${e.retryAfter !== undefined ? ` — retry in ${e.retryAfter} s` : ''}`;
  return e instanceof Error ? e.message : String(e);
}
