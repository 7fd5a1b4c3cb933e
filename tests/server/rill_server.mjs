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
