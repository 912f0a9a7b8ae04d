// S3's ListMultipartUploads for tests, in front of s3rver (which does not implement it):
// an HTTP proxy on 127.0.0.1 and a free port that forwards every request to
// TARGET_PORT, remembers the multipart uploads it sees begun (POST ?uploads) until they
// are completed (POST ?uploadId=...) or aborted, and answers GET /BUCKET?uploads
// [&prefix=P] itself with those uploads, as S3 lists them (one page), and the abort
// (DELETE ?uploadId=...: 204, 404 for an upload it does not know). Path-style requests
// only. Prints "listening <port>"; stops when its stdin closes.
//   node uploads_proxy.mjs TARGET_PORT
import http from 'node:http';

const target = Number(process.argv[2]);
const uploads = new Map();  // upload id -> { bucket, key, initiated }

const escape = (s) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function list(res, bucket, prefix) {
  let xml = `<?xml version="1.0" encoding="UTF-8"?><ListMultipartUploadsResult><Bucket>${escape(bucket)}</Bucket>` +
    `<Prefix>${escape(prefix)}</Prefix><IsTruncated>false</IsTruncated>`;
  const rows = [...uploads.entries()].filter(([, u]) => u.bucket === bucket && u.key.startsWith(prefix))
    .sort((a, b) => (a[1].key < b[1].key ? -1 : a[1].key > b[1].key ? 1 : 0));
  for (const [id, u] of rows)
    xml += `<Upload><Key>${escape(u.key)}</Key><UploadId>${escape(id)}</UploadId>` +
      `<Initiated>${u.initiated.toISOString()}</Initiated></Upload>`;
  xml += '</ListMultipartUploadsResult>';
  res.writeHead(200, { 'content-type': 'application/xml', 'content-length': Buffer.byteLength(xml) });
  res.end(xml);
}

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://proxy');
  const [, bucket, ...rest] = url.pathname.split('/');
  const key = decodeURIComponent(rest.join('/'));
  if (req.method === 'GET' && key === '' && url.searchParams.has('uploads')) {
    req.resume();
    req.on('end', () => list(res, bucket, url.searchParams.get('prefix') ?? ''));
    return;
  }
  if (req.method === 'DELETE' && url.searchParams.has('uploadId')) {  // s3rver cannot abort: the upload is forgotten
    const known = uploads.delete(url.searchParams.get('uploadId'));
    req.resume();
    req.on('end', () => { res.writeHead(known ? 204 : 404); res.end(); });
    return;
  }
  const begins = req.method === 'POST' && url.searchParams.has('uploads');
  const ends = req.method === 'POST' && url.searchParams.has('uploadId');
  const up = http.request({ host: '127.0.0.1', port: target, method: req.method, path: req.url, headers: req.headers },
    (answer) => {
      const chunks = [];
      answer.on('data', (c) => chunks.push(c));
      answer.on('end', () => {
        const body = Buffer.concat(chunks);
        const ok = answer.statusCode >= 200 && answer.statusCode < 300;
        if (ok && begins) {
          const id = /<UploadId>([^<]*)<\/UploadId>/.exec(body.toString())?.[1];
          if (id) uploads.set(id, { bucket, key, initiated: new Date() });
        }
        if (ok && ends) uploads.delete(url.searchParams.get('uploadId'));
        res.writeHead(answer.statusCode, answer.headers);
        res.end(body);
      });
    });
  up.on('error', () => req.socket.destroy());
  req.pipe(up);
});
server.listen(0, '127.0.0.1', () => console.log(`listening ${server.address().port}`));
process.stdin.on('end', () => { server.close(); process.exit(0); });
process.stdin.resume();
