// Opens attachments off the main thread: a binary box (version byte 2,
// epk, nonce, tag, then the ciphertext) opened with the address's secret
// and the context `service/v1/attachment:<messageId>:<index>`. The secret
// arrives with each job and is zeroed when the job ends; the worker keeps
// nothing between jobs and makes no request.
import { attachmentContext, openBinary } from '@sealpost/sdk';

export interface OpenJob {
  id: number;
  sealed: ArrayBuffer;
  secret: Uint8Array;
  messageId: string;
  index: number;
}

export type OpenAnswer =
  | { id: number; ok: true; bytes: ArrayBuffer; openMs: number }
  | { id: number; ok: false; error: string };

const scope = self as unknown as {
  onmessage: ((e: MessageEvent<OpenJob>) => void) | null;
  postMessage(message: OpenAnswer, transfer?: Transferable[]): void;
};

scope.onmessage = (e) => {
  const job = e.data;
  const started = performance.now();
  try {
    const plain = openBinary(new Uint8Array(job.sealed), job.secret, attachmentContext(job.messageId, job.index));
    const bytes =
      plain.byteOffset === 0 && plain.byteLength === plain.buffer.byteLength
        ? (plain.buffer as ArrayBuffer)
        : (plain.slice().buffer as ArrayBuffer);
    scope.postMessage({ id: job.id, ok: true, bytes, openMs: performance.now() - started }, [bytes]);
  } catch (err) {
    scope.postMessage({ id: job.id, ok: false, error: err instanceof Error ? err.message : String(err) });
  } finally {
    job.secret.fill(0);
  }
};
