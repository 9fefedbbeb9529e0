// The event stream: SSE frames read from a fetch streaming body (a fake
// fetch here), resumed with Last-Event-ID, refusals as ApiError.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ApiError, parseFrame, SealpostClient, type StreamedEvent } from '../src/index.js';

/** A streaming answer whose body arrives in `chunks`, cut anywhere. */
function streaming(chunks: string[]): Response {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
  return new Response(body, { status: 200, headers: { 'content-type': 'text/event-stream' } });
}

test('streamEvents: frames cut across chunks come whole, in order; comments and id-only frames skipped', async () => {
  const seen: { url: string; headers: Record<string, string> }[] = [];
  const fetch = (async (url: string, init: RequestInit) => {
    seen.push({ url, headers: init.headers as Record<string, string> });
    return streaming([
      'id: c3RhcnQ\n\n: keep-',
      'alive\n\nid: ZTEuMg\nevent: inbox.created\ndata: {"type":"inbox.created",',
      '"payload":{"inboxId":"ibx_a1"}}\n\r\n',
      'id: ZTIuMw\r\nevent: resync\r\ndata: {"type":"resync","payload":{}}\r\n\r\n',
    ]);
  }) as typeof globalThis.fetch;
  const client = new SealpostClient({ baseUrl: 'https://api.example.com/', token: 'tok', fetch });
  const events: StreamedEvent[] = [];
  for await (const event of client.streamEvents({ lastEventId: 'ZTAuMQ' })) events.push(event);
  assert.deepEqual(events, [
    { id: 'ZTEuMg', type: 'inbox.created', payload: { inboxId: 'ibx_a1' } },
    { id: 'ZTIuMw', type: 'resync', payload: {} },
  ]);
  assert.equal(seen.length, 1);
  assert.equal(seen[0]?.url, 'https://api.example.com/events/stream');
  assert.equal(seen[0]?.headers['authorization'], 'Bearer tok');
  assert.equal(seen[0]?.headers['last-event-id'], 'ZTAuMQ');
  assert.ok(!seen[0]?.url.includes('tok'), 'the token never goes in the URL');
});

test('streamEvents: a refusal is an ApiError with its code and Retry-After', async () => {
  const fetch = (async () =>
    new Response(JSON.stringify({ error: { code: 'rate_limited', message: 'at most 5' } }), {
      status: 429,
      headers: { 'content-type': 'application/json', 'retry-after': '15' },
    })) as typeof globalThis.fetch;
  const client = new SealpostClient({ baseUrl: 'https://api.example.com', token: 'tok', fetch });
  await assert.rejects(
    async () => {
      for await (const event of client.streamEvents()) assert.fail(`unexpected ${event.type}`);
    },
    (error: unknown) => error instanceof ApiError && error.code === 'rate_limited' && error.retryAfter === 15,
  );
});

test('parseFrame: fields, joined data lines, comments', () => {
  assert.deepEqual(parseFrame('id: a\nevent: x\ndata: one\ndata:two'), { id: 'a', event: 'x', data: 'one\ntwo' });
  assert.deepEqual(parseFrame(': keep-alive'), {});
});
