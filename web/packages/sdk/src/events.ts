/**
 * The account's event stream (docs/api.md "Event stream"): server-sent
 * events read from a fetch streaming body, since `EventSource` cannot send
 * an `Authorization` header and tokens never go in URLs.
 */

/** One event of the stream. */
export interface StreamedEvent {
  /** The position after this event: pass it as `lastEventId` to resume after it. */
  id: string;
  /** The event type (`inbox.created`, ...), or `resync`: events were missed; read the state again. */
  type: string;
  /** Ids only. */
  payload: Record<string, unknown>;
}

/** One frame's fields: the last `id:`, the `event:`, the `data:` lines joined with newlines. */
export interface RawFrame {
  id?: string;
  event?: string;
  data?: string;
}

/** Parses one frame's text (without the blank line that ends it); comments give no fields. */
export function parseFrame(text: string): RawFrame {
  const frame: RawFrame = {};
  for (const raw of text.split('\n')) {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line === '' || line.startsWith(':')) continue;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'id') frame.id = value;
    else if (field === 'event') frame.event = value;
    else if (field === 'data') frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
  }
  return frame;
}

/** The frames of a streaming body, in order, until it ends. */
export async function* readFrames(body: ReadableStream<Uint8Array>): AsyncGenerator<RawFrame> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += decoder.decode(value, { stream: true }).replaceAll('\r\n', '\n');
      let end = buffer.indexOf('\n\n');
      while (end >= 0) {
        yield parseFrame(buffer.slice(0, end));
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf('\n\n');
      }
    }
  } finally {
    reader.releaseLock();
  }
}
