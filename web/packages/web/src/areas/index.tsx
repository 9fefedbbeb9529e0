// The account's areas, in the order the navigation shows them. Each area is
// one component in its own file, given the signed-in session.
import type { ComponentType } from 'preact';

import type { Unlocked } from '../session';
import { Activity } from './Activity';
import { Addresses } from './Addresses';
import { ApiKeys } from './ApiKeys';
import { Billing } from './Billing';
import { Devices } from './Devices';
import { Domains } from './Domains';
import { Mailbox } from './Mail';
import { Settings } from './Settings';
import { Support } from './Support';
import { Teams } from './Teams';
import { Webhooks } from './Webhooks';

export interface Area {
  /** Stable id: the URL fragment (`#mail`) and the test ids (`nav-mail`). */
  id: string;
  title: string;
  View: ComponentType<{ session: Unlocked }>;
}

export const AREAS: Area[] = [
  { id: 'mail', title: 'Mail', View: Mailbox },
  { id: 'addresses', title: 'Addresses', View: Addresses },
  { id: 'devices', title: 'Devices', View: Devices },
  { id: 'domains', title: 'Own domains', View: Domains },
  { id: 'billing', title: 'Plan and billing', View: Billing },
  { id: 'teams', title: 'Teams', View: Teams },
  { id: 'webhooks', title: 'Webhooks', View: Webhooks },
  { id: 'api-keys', title: 'API keys', View: ApiKeys },
  { id: 'activity', title: 'Activity', View: Activity },
  { id: 'settings', title: 'Notifications and sessions', View: Settings },
  { id: 'support', title: 'Support', View: Support },
];
