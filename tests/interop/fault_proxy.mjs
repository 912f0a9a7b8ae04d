// Faults for the object-store tests: an HTTP proxy on 127.0.0.1 and a free port in
// front of TARGET_PORT that forwards requests, except:
//   every Nth request (N = --every, counted over all requests) gets a fault instead,
//   chosen in turn from: a 503 answer, a 500 answer, the connection closed halfway
//   through the request body (PUTs with a body; others get a 503), and an answer held
//   back for --delay-ms (a slow server: the client's timeout should end the wait);
//   requests whose path contains --fail-path (when given; and whose method is
//   --fail-method, when given) always get a 503.
// Prints "listening <port>", then stops when its stdin closes; on exit it prints
// {"faults": n, "forwarded": m} on stderr.
//   node fault_proxy.mjs TARGET_PORT [--every N] [--delay-ms MS] [--fail-path TEXT [--fail-method M]]
import http from 'node:http';
import { parseArgs } from './lib.mjs';

const args = parseArgs(process.argv.slice(2));
const target = Number(args._[0]);
const every = Number(args.every ?? 0);
const delayMs = Number(args['delay-ms'] ?? 3000);
const failPath = args['fail-path'];
const failMethod = args['fail-method'];
let count = 0, faults = 0, forwarded = 0;
const kinds = ['503', '500', 'cut', 'slow'];

function forward(req, res, delay = 0) {
  ++forwarded;
  const up = http.request({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers },
    (answer) => {
      setTimeout(() => {
        if (res.destroyed) { answer.resume(); return; }
        res.writeHead(answer.statusCode, answer.headers);
        answer.pipe(res);
      }, delay);
    });
  up.on('error', () => req.socket.destroy());
  req.pipe(up);
}

function fail(req, res, status) {
  req.resume();
  req.on('end', () => { res.writeHead(status, { 'content-type': 'text/plain' }); res.end(`injected ${status}`); });
}

const server = http.createServer((req, res) => {
  ++count;
  if (failPath && req.url.includes(failPath) && (!failMethod || req.method === failMethod)) { ++faults; fail(req, res, 503); return; }
  if (!every || count % every !== 0) { forward(req, res); return; }
  ++faults;
  const kind = kinds[(count / every - 1) % kinds.length];
  const hasBody = Number(req.headers['content-length'] ?? 0) > 0;
  if (kind === 'cut' && hasBody) {
    let seen = 0;
    const half = Number(req.headers['content-length']) / 2;
    req.on('data', (chunk) => { seen += chunk.length; if (seen >= half) req.socket.destroy(); });
  } else if (kind === 'slow') {
    forward(req, res, delayMs);
  } else {
    fail(req, res, kind === '500' ? 500 : 503);
  }
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.stdin.on('end', () => {
  process.stderr.write(`${JSON.stringify({ faults, forwarded })}\n`);
  server.close();
  process.exit(0);
});
process.stdin.resume();
