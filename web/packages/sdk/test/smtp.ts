// A minimal SMTP client over node:net for the integration test: EHLO, MAIL,
// RCPT, DATA (dot-stuffed, CRLF), QUIT. No TLS, no auth: the local stack's
// inbound port.
import { connect, type Socket } from 'node:net';

export interface Mail {
  from: string;
  to: string;
  /** The whole RFC 5322 message; line ends are normalised to CRLF. */
  data: string;
}

class Replies {
  #buffer = '';
  #waiting: Array<(line: string) => void> = [];
  #lines: string[] = [];
  #error: Error | undefined;

  constructor(socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.#buffer += chunk;
      let at: number;
      while ((at = this.#buffer.indexOf('\n')) >= 0) {
        const line = this.#buffer.slice(0, at).replace(/\r$/, '');
        this.#buffer = this.#buffer.slice(at + 1);
        const waiter = this.#waiting.shift();
        if (waiter) waiter(line);
        else this.#lines.push(line);
      }
    });
    const fail = (e: Error): void => {
      this.#error = e;
      for (const w of this.#waiting.splice(0)) w(`999 ${e.message}`);
    };
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('connection closed')));
  }

  #line(): Promise<string> {
    const ready = this.#lines.shift();
    if (ready !== undefined) return Promise.resolve(ready);
    if (this.#error) return Promise.resolve(`999 ${this.#error.message}`);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** One reply (all its lines); throws unless its code is `expected`. */
  async expect(expected: number, what: string): Promise<string> {
    const lines: string[] = [];
    for (;;) {
      const line = await this.#line();
      lines.push(line);
      if (line.length < 4 || line[3] !== '-') break;
    }
    const code = Number(lines.at(-1)?.slice(0, 3));
    if (code !== expected) throw new Error(`SMTP ${what}: expected ${expected}, got ${lines.join(' | ')}`);
    return lines.join('\n');
  }
}

/** Sends one message to `host:port`; rejects on any unexpected reply or after `timeoutMs`. */
export async function sendMail(address: string, mail: Mail, timeoutMs = 20_000): Promise<void> {
  const cut = address.lastIndexOf(':');
  const host = address.slice(0, cut).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(cut + 1));
  const socket = connect({ host, port });
  socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`SMTP to ${address} timed out`)));
  const replies = new Replies(socket);
  const send = (line: string): void => {
    socket.write(`${line}\r\n`);
  };
  try {
    await replies.expect(220, 'greeting');
    send('EHLO sdk-test.localhost');
    await replies.expect(250, 'EHLO');
    send(`MAIL FROM:<${mail.from}>`);
    await replies.expect(250, 'MAIL FROM');
    send(`RCPT TO:<${mail.to}>`);
    await replies.expect(250, 'RCPT TO');
    send('DATA');
    await replies.expect(354, 'DATA');
    const body = mail.data
      .replace(/\r?\n/g, '\r\n')
      .split('\r\n')
      .map((line) => (line.startsWith('.') ? `.${line}` : line))
      .join('\r\n');
    socket.write(`${body}${body.endsWith('\r\n') ? '' : '\r\n'}.\r\n`);
    await replies.expect(250, 'end of data');
    send('QUIT');
    await replies.expect(221, 'QUIT').catch(() => undefined);
  } finally {
    socket.end();
    socket.destroy();
  }
}
