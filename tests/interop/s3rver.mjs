// An S3 emulator for the object-store tests: s3rver 3.7.1 on 127.0.0.1 and a free port,
// storing under DIR, with the given buckets. Prints "listening <port>" once it is ready
// and stops when its stdin closes (the test holds the other end).
//   node --openssl-legacy-provider s3rver.mjs DIR BUCKET...
// (--openssl-legacy-provider: s3rver's listing continuation tokens use DES.)
import S3rver from 's3rver';

const [dir, ...buckets] = process.argv.slice(2);
const server = new S3rver({
  address: '127.0.0.1', port: 0, silent: true, directory: dir,
  configureBuckets: buckets.map((name) => ({ name, configs: [] })),
});
const { port } = await server.run();
console.log(`listening ${port}`);
process.stdin.on('end', async () => { await server.close(); process.exit(0); });
process.stdin.resume();
