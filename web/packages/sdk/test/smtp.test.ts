// The integration test's SMTP client against a scripted SMTP server on loopback.
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { test } from 'node:test';

import { sendMail } from './smtp.js';

test('smtp client: speaks EHLO/MAIL/RCPT/DATA/QUIT with dot-stuffing', async () => {
  const received: string[] = [];
  const server = createServer((socket) => {
    socket.setEncoding('utf8');
    let data = false;
    let buffer = '';
    socket.write('220 fake ESMTP\r\n');
    socket.on('data', (chunk: string) => {
      buffer += chunk;
      let at: number;
      while ((at = buffer.indexOf('\r\n')) >= 0) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 2);
        if (data) {
          if (line === '.') {
            data = false;
            socket.write('250 2.0.0 queued\r\n');
          } else received.push(line);
          continue;
        }
        received.push(`> ${line}`);
        if (line.startsWith('EHLO')) socket.write('250-fake\r\n250 PIPELINING\r\n');
        else if (line === 'DATA') {
          data = true;
          socket.write('354 go on\r\n');
        } else if (line === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await sendMail(`127.0.0.1:${port}`, { from: 'a@example.com', to: 'b@mail.localhost', data: 'Subject: hi\n\n.hidden dot\nbody' });
  } finally {
    server.close();
  }
  assert.deepEqual(received, [
    '> EHLO sdk-test.localhost',
    '> MAIL FROM:<a@example.com>',
    '> RCPT TO:<b@mail.localhost>',
    '> DATA',
    'Subject: hi',
    '',
    '..hidden dot',
    'body',
    '> QUIT',
  ]);
});

test('smtp client: an unexpected reply fails', async () => {
  const server = createServer((socket) => {
    socket.write('220 fake\r\n');
    socket.on('data', () => socket.write('550 5.1.1 no such user\r\n'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    await assert.rejects(sendMail(`127.0.0.1:${port}`, { from: 'a@x.example', to: 'b@y.example', data: 'x' }), /550/);
  } finally {
    server.close();
  }
});
