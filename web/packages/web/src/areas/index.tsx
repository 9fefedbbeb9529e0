// The account's areas, in the order the navigation shows them. Each area is
// one component in its own file, given the signed-in session.
import type { ComponentType } from 'preact';

import type { Unlocked } from '../session';
import { Activity } from './Activity';
import { Mailbox } from './Mail';
import { Settings } from './Settings';

export interface Area {
  /** Stable id: the URL fragment (`#mail`) and the test ids (`nav-mail`). */
  id: string;
  title: string;
  View: ComponentType<{ session: Unlocked }>;
}

export const AREAS: Area[] = [
  { id: 'mail', title: 'Mail', View: Mailbox },
  { id: 'settings', title: 'Notifications and sessions', View: Settings },
  { id: 'activity', title: 'Activity', View: Activity },
];
