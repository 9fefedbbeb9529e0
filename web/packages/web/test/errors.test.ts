// Every error code of the API's OpenAPI document has a message a person can
// read: the test fails when the server's table gains a code the page does
// not explain.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { describeApiError, ERROR_MESSAGES, serverDetail } from '../src/errors.js';

const doc = JSON.parse(readFileSync(new URL('../../../../../docs/openapi.json', import.meta.url), 'utf8')) as {
  components: { schemas: { ErrorDetail: { properties: { code: { enum?: string[] } } } } };
};

test('every error code in docs/openapi.json has a message', () => {
  const codes = doc.components.schemas.ErrorDetail.properties.code.enum;
  assert.ok(Array.isArray(codes) && codes.length > 40, 'ErrorDetail.code is an enum of every code');
  const messages = ERROR_MESSAGES as Record<string, string>;
  const missing = codes.filter((c) => typeof messages[c] !== 'string' || messages[c]!.length < 20);
  assert.deepEqual(missing, [], 'codes without a message');
  // And no message for a code the API no longer has.
  const stale = Object.keys(ERROR_MESSAGES).filter((c) => c !== 'http_error' && !codes.includes(c));
  assert.deepEqual(stale, []);
});

test('describeApiError: the sentence, the detail that names a field, the wait', () => {
  const field = describeApiError({ code: 'invalid_field', message: 'to[0]: not an email address (invalid_field, HTTP 400)', retryAfter: undefined });
  assert.equal(field, `${ERROR_MESSAGES.invalid_field} (to[0]: not an email address)`);
  const limited = describeApiError({ code: 'rate_limited', message: 'hourly send limit (rate_limited, HTTP 429)', retryAfter: 120 });
  assert.match(limited, /^Too many requests/);
  assert.match(limited, /try again in 2 minutes\.$/);
  assert.equal(describeApiError({ code: 'send_failed', message: 'x (send_failed, HTTP 502)', retryAfter: undefined }), ERROR_MESSAGES.send_failed);
  assert.match(describeApiError({ code: 'brand_new', message: 'what (brand_new, HTTP 418)', retryAfter: undefined }), /does not know.*\(what\)$/);
  assert.equal(serverDetail('no such record (not_found, HTTP 404)'), 'no such record');
});
