// Starts and stops `rill serve` for the server tests: a child process on a free loopback port,
// resolved once it prints its address, with its log kept for failure messages.
import { spawn } from 'node:child_process';

// `args` are everything after `rill serve`; `--port 0` should be among them.
export function startRill(rill, args) {
  return new Promise((resolve, reject) => {
    const child = spawn(rill, ['serve', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    const server = { child, log: '', url: null };
    const timer = setTimeout(() => reject(new Error(`rill serve did not start:\n${server.log}`)), 60000);
    child.stderr.on('data', (chunk) => {
      server.log += chunk;
      const m = /on (http:\/\/[\d.]+:\d+)/.exec(server.log);
      if (m && !server.url) {
        server.url = m[1];
        clearTimeout(timer);
        resolve(server);
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (!server.url) reject(new Error(`rill serve exited with ${code}:\n${server.log}`));
    });
  });
}

// Sends SIGTERM; resolves with the exit code.
export function stopRill(server) {
  return new Promise((resolve) => {
    if (!server || server.child.exitCode !== null) return resolve(server?.child.exitCode);
    server.child.on('exit', (code) => resolve(code));
    server.child.kill('SIGTERM');
  });
}

// The openai package's own HTTP stack, node-fetch@2, rejects complete keep-alive responses as "Premature
// close": it takes any 'data' listener left on the socket when a response closes as a sign of truncation,
// and Debian's Node.js builds leave the agent's own listener there (Debian 12's 18.20.4+dfsg-1~deb12u3
// with its fix for CVE-2026-48931, Node.js issue 63989; Debian 13's 20.19.2 as well: seen with rill
// built against either release's cpp-httplib). The bytes rill sends are the same on every Node.js
// (server.test.mjs's framing test reads them raw), so the client is always given Node's built-in fetch,
// which the package supports through its `fetch` option.
export const NODE_MAJOR = Number(process.versions.node.split('.')[0]);
export const clientFetch = { fetch: globalThis.fetch };
