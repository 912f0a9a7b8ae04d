// A fault for the object-store tests: an HTTP proxy on 127.0.0.1 and a free port in
// front of TARGET_PORT that forwards every request, but drops the answer to the first
// conditional PUT (If-None-Match: *) after the server has handled it, closing the
// connection, as a network failure between store and client would. Prints
// "listening <port>"; stops when its stdin closes.
//   node drop_proxy.mjs TARGET_PORT
import http from 'node:http';

const target = Number(process.argv[2]);
let dropped = false;
const server = http.createServer((req, res) => {
  const drop = !dropped && req.method === 'PUT' && req.headers['if-none-match'] === '*';
  if (drop) dropped = true;
  const up = http.request({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers },
    (answer) => {
      if (drop) { answer.resume(); answer.on('end', () => req.socket.destroy()); return; }
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    });
  up.on('error', () => req.socket.destroy());
  req.pipe(up);
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.stdin.on('end', () => { server.close(); process.exit(0); });
process.stdin.resume();
