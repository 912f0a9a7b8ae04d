// An Azure Blob emulator for the object-store tests: Azurite's blob service on 127.0.0.1
// and a free port, storing under DIR, with the given containers created in the
// emulator's account (devstoreaccount1). Prints "listening <port>" once it answers and
// stops Azurite when its stdin closes (the test holds the other end). With --tls CERT KEY
// it serves https with that certificate (the script itself does not verify it).
//   node azurite.mjs [--tls CERT KEY] DIR CONTAINER...
import { spawn } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

let args = process.argv.slice(2);
let tls = null;
if (args[0] === '--tls') { tls = { cert: args[1], key: args[2] }; args = args.slice(3); }
const [dir, ...containers] = args;
if (tls) {
  process.emitWarning = () => {};  // the warning about the next line
  process.env.NODE_TLS_REJECT_UNAUTHORIZED = '0';  // our own test certificate
}
const here = path.dirname(fileURLToPath(import.meta.url));
const port = await new Promise((resolve) => {
  const s = createServer();
  s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
});
const child = spawn(process.execPath, [path.join(here, 'node_modules/azurite/dist/src/blob/main.js'),
  '--blobHost', '127.0.0.1', '--blobPort', String(port), '--location', dir, '--silent', '--disableTelemetry',
  '--skipApiVersionCheck', ...(tls ? ['--cert', tls.cert, '--key', tls.key] : [])], { stdio: ['ignore', 'ignore', 'inherit'] });
child.on('exit', (code) => { if (!stopping) { console.error(`azurite exited with ${code}`); process.exit(1); } });
let stopping = false;

const open = () => new Promise((resolve) => {
  const c = connect(port, '127.0.0.1', () => { c.end(); resolve(true); });
  c.on('error', () => resolve(false));
});
for (let i = 0; !(await open()); ++i) {
  if (i > 300) { console.error('azurite did not start'); child.kill('SIGKILL'); process.exit(1); }
  await new Promise((r) => setTimeout(r, 100));
}
// The containers, through Azurite's anonymous-free path: the SDK is not a dependency,
// so the test creates them itself when it needs more than these.
const { createHmac } = await import('node:crypto');
const account = 'devstoreaccount1';
const key = Buffer.from('Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==', 'base64');
for (const c of containers) {
  const date = new Date().toUTCString();
  const toSign = `PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:${date}\nx-ms-version:2023-11-03\n/${account}/${account}/${c}\nrestype:container`;
  const sig = createHmac('sha256', key).update(toSign).digest('base64');
  const r = await fetch(`${tls ? 'https' : 'http'}://127.0.0.1:${port}/${account}/${c}?restype=container`, {
    method: 'PUT', headers: { 'x-ms-date': date, 'x-ms-version': '2023-11-03', Authorization: `SharedKey ${account}:${sig}` },
  });
  if (r.status !== 201) { console.error(`creating container ${c}: HTTP ${r.status} ${await r.text()}`); child.kill('SIGKILL'); process.exit(1); }
}
console.log(`listening ${port}`);
process.stdin.on('end', () => { stopping = true; child.kill('SIGTERM'); setTimeout(() => child.kill('SIGKILL'), 5000).unref(); child.on('exit', () => process.exit(0)); });
process.stdin.resume();
