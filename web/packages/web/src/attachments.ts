// Saving an attachment: the sealed bytes are fetched here (the bearer never
// enters the worker), opened in a Web Worker, and handed to the browser as
// a download under the sender's file name (made safe). The bytes are never
// shown in the page: the Blob is `application/octet-stream` and the link
// carries `download`, so nothing is rendered inline whatever the type.
import type { AddressSecrets, AttachmentInfo, Message, SealpostClient } from '@sealpost/sdk';

import type { OpenAnswer, OpenJob } from './attachment.worker';
import { safeFileName } from './logic';

let worker: Worker | null = null;
let nextJob = 1;
const pending = new Map<number, { resolve: (a: OpenAnswer) => void; reject: (e: Error) => void }>();

function theWorker(): Worker {
  if (worker === null) {
    worker = new Worker(new URL('./attachment.worker.ts', import.meta.url), { type: 'module', name: 'sealpost-attachments' });
    worker.onmessage = (e: MessageEvent<OpenAnswer>) => {
      const waiting = pending.get(e.data.id);
      pending.delete(e.data.id);
      waiting?.resolve(e.data);
    };
    worker.onerror = (e) => {
      for (const w of pending.values()) w.reject(new Error(e.message || 'the attachment worker failed'));
      pending.clear();
      worker?.terminate();
      worker = null;
    };
  }
  return worker;
}

/** Opens sealed attachment bytes in the worker; answers the plaintext and the time the worker took. */
export function openInWorker(sealed: Uint8Array, secret: Uint8Array, messageId: string, index: number): Promise<{ bytes: ArrayBuffer; openMs: number }> {
  const id = nextJob++;
  const buffer =
    sealed.byteOffset === 0 && sealed.byteLength === sealed.buffer.byteLength ? (sealed.buffer as ArrayBuffer) : (sealed.slice().buffer as ArrayBuffer);
  const job: OpenJob = { id, sealed: buffer, secret: Uint8Array.from(secret), messageId, index };
  return new Promise((resolve, reject) => {
    pending.set(id, {
      resolve: (a) => (a.ok ? resolve({ bytes: a.bytes, openMs: a.openMs }) : reject(new Error(`the attachment did not open: ${a.error}`))),
      reject,
    });
    theWorker().postMessage(job, [buffer]);
  });
}

/** Fetches, opens and saves attachment `info` of `message`; records `sealpost:attachment` timings. */
export async function saveAttachment(client: SealpostClient, secrets: AddressSecrets, message: Message, info: AttachmentInfo): Promise<string> {
  const secret = secrets.secretFor(message.addressId, message.keyEpoch);
  if (secret === undefined) throw new Error(`no key for ${message.addressId} at epoch ${message.keyEpoch}`);
  const started = performance.now();
  const sealed = await client.getAttachment(message.id, info.index);
  const fetched = performance.now();
  const { bytes, openMs } = await openInWorker(sealed, secret, message.id, info.index);
  const name = safeFileName(info.filename, info.index);
  const url = URL.createObjectURL(new Blob([bytes], { type: 'application/octet-stream' }));
  try {
    const a = document.createElement('a');
    a.href = url;
    a.download = name;
    a.rel = 'noopener';
    a.style.display = 'none';
    document.body.append(a);
    a.click();
    a.remove();
  } finally {
    // Long enough for the browser to start the download.
    setTimeout(() => URL.revokeObjectURL(url), 30_000);
  }
  const done = performance.now();
  performance.measure('sealpost:attachment', { start: started, end: done, detail: { bytes: bytes.byteLength, fetchMs: fetched - started, openMs } });
  return name;
}
