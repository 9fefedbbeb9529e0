// Pure logic of the activity area: activity kinds and event types in words.

const WORDS: Record<string, string> = {
  'worker.paired': 'A device was paired',
  'worker.removed': 'A device was removed',
  'worker.connected': 'A device is active again',
  'worker.disconnected': 'A device has been offline for two hours',
  'inbox.created': 'An address was created',
  'inbox.deleted': 'An address was deleted',
  'inbox.assigned': 'An address was given to a device',
  'inbox.removed': 'An address was taken off a device',
  'subscription.updated': 'The plan changed',
  'subscription.renewal_due': 'The paid period ends soon',
  'message.received': 'Mail arrived',
  'mail.received': 'Mail arrived',
  'mail.sent': 'Mail was sent',
  'message.sent': 'Mail was sent',
  'webhook.test': 'A webhook test was sent',
  'domain.added': 'A domain was added',
  'domain.verified': 'A domain was verified',
  'domain.live': 'A domain is live',
  'domain.attention': 'A domain needs attention',
  'domain.removed': 'A domain was removed',
  resync: 'Events were missed: the list was read again',
};

/** An activity kind or event type in words; an unknown one as itself. */
export function activityWords(kind: string): string {
  return WORDS[kind] ?? kind;
}
