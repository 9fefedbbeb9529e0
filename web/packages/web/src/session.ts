// The signed-in state shared by the account's areas.
import type { AccountKeys, SealpostClient } from '@sealpost/sdk';

/**
 * The signed-in state. Kept in memory only: nothing here (or anything
 * secret) goes to web storage, databases, cookies or a URL.
 */
export interface Unlocked {
  client: SealpostClient;
  keys: AccountKeys;
  /** Called once this session was signed out on the server (Settings' "sign out everywhere"): forget it. */
  signedOut?: () => void;
}
