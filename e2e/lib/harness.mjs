// Starting toolprof's server (bin/server) in front of the everything-server
// for the end-to-end suite, connecting the official TypeScript SDK client to
// it over stdio and streamable HTTP, and cleaning up after: every process
// started here is killed, and every temporary directory removed.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { ENABLE_TOOLS, PAGE_SIZE } from './expect.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

// E2E_DIR is the e2e/ directory; REPO_DIR the repository.
export const E2E_DIR = path.resolve(here, '..');
export const REPO_DIR = path.resolve(E2E_DIR, '..');

// BIN_DIR holds server and everything-server: $TOOLPROF_BIN (the Makefile
// sets it), else the repository's bin/.
export const BIN_DIR = path.resolve(process.env.TOOLPROF_BIN || path.join(REPO_DIR, 'bin'));
export const SERVER = path.join(BIN_DIR, 'server');
export const EVERYTHING = path.join(BIN_DIR, 'everything-server');
export const PROFILES_FILE = path.join(E2E_DIR, 'testdata', 'profiles.generated.toml');

for (const bin of [SERVER, EVERYTHING]) {
  if (!fs.existsSync(bin)) {
    throw new Error(`${bin} does not exist: run "make build" (or "make test-e2e"), or set TOOLPROF_BIN to the directory holding server and everything-server`);
  }
}

// CLIENT_INFO is how the suite's SDK clients introduce themselves.
export const CLIENT_INFO = { name: 'toolprof-e2e', version: '1.0.0' };

// deferred holds, per test context, the cleanups registered with defer.
const deferred = new WeakMap();

// defer registers fn to run after t, in reverse order of registration (as Go's
// defer): node:test runs t.after hooks in the order they were added, which
// would remove a server's directory before stopping the server. Every cleanup
// runs; the first failure is rethrown.
export function defer(t, fn) {
  let stack = deferred.get(t);
  if (!stack) {
    stack = [];
    deferred.set(t, stack);
    t.after(async () => {
      let first;
      while (stack.length) {
        try {
          await stack.pop()();
        } catch (err) {
          first ??= err;
        }
      }
      if (first) throw first;
    });
  }
  stack.push(fn);
}

// tempDir makes a temporary directory removed after t.
export function tempDir(t, prefix = 'toolprof-e2e-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  defer(t, () => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// serverEnv is the environment the server runs with: the SDK's safe default
// set (no secrets), without any toolprof setting from the caller's shell, HOME
// an empty directory (no operator sidecar such as
// ~/.toolprof/operating-context.toml), plus extra.
export function serverEnv(t, extra = {}) {
  return { ...withoutToolprof(getDefaultEnvironment()), HOME: tempDir(t, 'toolprof-e2e-home-'), ...extra };
}

// withoutToolprof drops every TOOLPROF_ variable (profile, cursor key,
// operating context...) from env, so that the caller's shell cannot change
// what the server serves.
function withoutToolprof(env) {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('TOOLPROF_')));
}

// serverArgs are bin/server's arguments in front of the everything-server.
export function serverArgs(telemetryDir, flags = []) {
  return [
    '--profiles', PROFILES_FILE,
    '--telemetry', telemetryDir,
    '--page-size', String(PAGE_SIZE),
    ...flags,
    '--', EVERYTHING,
  ];
}

// descendants lists the live processes below pid (Linux /proc; elsewhere []).
export function descendants(pid) {
  let entries;
  try {
    entries = fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  const children = new Map();
  for (const e of entries) {
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${e}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid ...; comm may hold spaces and parentheses.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (rest[0] === 'Z') continue; // exited, waiting to be reaped
    const ppid = Number(rest[1]);
    if (!children.has(ppid)) children.set(ppid, []);
    children.get(ppid).push(Number(e));
  }
  const out = [];
  const queue = [pid];
  while (queue.length) {
    for (const c of children.get(queue.shift()) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

// alive reports whether pid is a live (not zombie) process.
export function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}

// waitGone waits until none of pids is alive, or fails after ms.
export async function waitGone(pids, ms = 5000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = pids.filter(alive);
    if (left.length === 0) return;
    if (Date.now() > deadline) {
      for (const p of left) try { process.kill(p, 'SIGKILL'); } catch { /* gone */ }
      assert.fail(`processes ${left.join(', ')} still running ${ms} ms after their session closed (now killed)`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

// connectStdio starts bin/server over stdio with the SDK's StdioClientTransport
// and connects a Client. t.after closes the client and asserts that the server
// and its upstream exited. The result's stderr() is what the server wrote.
export async function connectStdio(t, { flags = [], env = {}, clientOptions = {} } = {}) {
  const telemetry = tempDir(t);
  const transport = new StdioClientTransport({
    command: SERVER,
    args: serverArgs(telemetry, flags),
    env: serverEnv(t, env),
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr.on('data', (b) => { stderr += b; });
  const client = new Client(CLIENT_INFO, clientOptions);
  let procs = [];
  defer(t, async () => {
    procs = procs.length ? procs : [transport.pid, ...descendants(transport.pid)].filter(Boolean);
    await client.close();
    await waitGone(procs);
    assert.doesNotMatch(stderr, /\bERROR\b/, `server over stdio logged an error; stderr:\n${stderr}`);
  });
  try {
    await client.connect(transport);
  } catch (err) {
    throw new Error(`connect over stdio to ${SERVER} ${serverArgs(telemetry, flags).join(' ')}: ${err.message}\nserver stderr:\n${stderr}`);
  }
  // The upstream is started before the handshake is answered: record it now,
  // so that cleanup can check that it is gone too.
  procs = [transport.pid, ...descendants(transport.pid)];
  return { client, telemetry, stderr: () => stderr, pids: procs };
}

// startHTTP starts bin/server --http 127.0.0.1:0 and waits for the line on
// stderr that names the address it bound. t.after stops it (SIGTERM, then
// SIGKILL after 5 s) and asserts that it and its upstream exited.
export async function startHTTP(t, { flags = [], env = {} } = {}) {
  const telemetry = tempDir(t);
  const args = serverArgs(telemetry, ['--http', '127.0.0.1:0', ...flags]);
  const child = spawn(SERVER, args, { env: serverEnv(t, env), stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  // A crash of the test process must not leave the server behind.
  const killOnExit = () => { try { child.kill('SIGKILL'); } catch { /* gone */ } };
  process.once('exit', killOnExit);
  let procs = [];
  defer(t, async () => {
    procs = [child.pid, ...descendants(child.pid)];
    process.removeListener('exit', killOnExit);
    const running = child.exitCode === null && child.signalCode === null;
    if (running) child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    const { code, signal } = await exited;
    clearTimeout(timer);
    await waitGone(procs);
    assert.ok(running, `server --http exited before the test ended (code ${code}, signal ${signal}); stderr:\n${stderr}`);
    assert.deepEqual({ code, signal }, { code: 0, signal: null }, `server --http shuts down cleanly on SIGTERM; stderr:\n${stderr}`);
    assert.doesNotMatch(stderr, /\bERROR\b/, `server --http logged an error; stderr:\n${stderr}`);
  });
  const base = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server --http did not report its address within 10 s; stderr:\n${stderr}`)), 10000);
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (s) => {
      stderr += s;
      // server: serving profile "core" on http://127.0.0.1:PORT/mcp — only
      // the address is relied on, so the wording may change.
      const m = /(http:\/\/127\.0\.0\.1:[1-9]\d*)\//.exec(stderr);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`server --http exited (code ${code}, signal ${signal}) before serving; stderr:\n${stderr}`));
    });
  });
  return { base, telemetry, stderr: () => stderr, child };
}

// connectHTTP connects a Client to url over streamable HTTP; t.after ends
// the session (DELETE) and closes the client.
export async function connectHTTP(t, url, clientOptions = {}) {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client(CLIENT_INFO, clientOptions);
  defer(t, async () => {
    try { await transport.terminateSession(); } catch { /* already ended */ }
    await client.close();
  });
  await client.connect(transport);
  return client;
}

// groupsServed reports whether this checkout's gateway serves enable_tools
// (tool groups, issue 9): its Go source outside tests names it. Decided from
// the source, not from the running server, so that a gateway that should
// serve groups but does not fails the group tests instead of skipping them.
export function groupsServed() {
  for (const dir of ['gateway', 'cmd/server']) {
    const abs = path.join(REPO_DIR, dir);
    let files;
    try {
      files = fs.readdirSync(abs);
    } catch {
      continue;
    }
    for (const f of files) {
      if (!f.endsWith('.go') || f.endsWith('_test.go')) continue;
      const src = fs.readFileSync(path.join(abs, f), 'utf8');
      if (src.includes('EnableToolsName') || src.includes(`"${ENABLE_TOOLS}"`) || src.includes('EnableToolsTool')) {
        return true;
      }
    }
  }
  return false;
}

// names lists the tool names of a tools/list result.
export function names(result) {
  return result.tools.map((t) => t.name);
}

// markedProcesses lists the live processes whose environment holds
// TOOLPROF_E2E_MARK=mark: what a client that spawns the server itself (the
// Inspector) left behind, the server and its upstream inheriting the mark.
// Linux /proc only; elsewhere [].
export function markedProcesses(mark) {
  let entries;
  try {
    entries = fs.readdirSync('/proc').filter((e) => /^\d+$/.test(e));
  } catch {
    return [];
  }
  const needle = `TOOLPROF_E2E_MARK=${mark}\0`;
  return entries.map(Number).filter((pid) => {
    try {
      return fs.readFileSync(`/proc/${pid}/environ`, 'latin1').includes(needle) && alive(pid);
    } catch {
      return false; // gone, or not ours to read
    }
  });
}

// clientEnv is the environment of a client process that starts the server
// itself: the caller's, without toolprof settings, HOME an empty directory
// (see serverEnv), plus extra.
export function clientEnv(t, extra = {}) {
  const env = withoutToolprof(process.env);
  // npm keeps its cache where it was; HOME, which the server inherits, is empty.
  env.npm_config_cache ??= path.join(os.homedir(), '.npm');
  env.npm_config_update_notifier = 'false'; // no registry request from npx
  return { ...env, HOME: tempDir(t, 'toolprof-e2e-home-'), ...extra };
}
