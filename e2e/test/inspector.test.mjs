// A smoke run of the MCP Inspector's command-line mode
// (@modelcontextprotocol/inspector 0.15.0, `npx mcp-inspector --cli`) through
// bin/server: list the tools, call an allowed tool, call a refused one, call
// an unknown one; over stdio (the Inspector starts the server) and over
// streamable HTTP.
//
// The server's own "--" is left out of its command line: the Inspector splits
// its argv at the first "--" and drops it, and the server takes the first
// argument that is not a flag as the upstream command anyway.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { test } from 'node:test';

import { assertRefused, membership } from '../lib/checks.mjs';
import { DEFAULT_PROFILE, PAGE_SIZE, SIMPLE_TEXT } from '../lib/expect.mjs';
import { E2E_DIR, EVERYTHING, PROFILES_FILE, SERVER, clientEnv, markedProcesses, startHTTP, tempDir } from '../lib/harness.mjs';

// inspector runs `npx --no-install mcp-inspector --cli ...args` in e2e/ and
// resolves with its exit code, stdout and stderr. It then asserts that no
// process it started (marked through the environment) is left running.
async function inspector(t, args) {
  const mark = randomUUID();
  const out = await new Promise((resolve, reject) => {
    execFile('npx', ['--no-install', 'mcp-inspector', '--cli', ...args], {
      cwd: E2E_DIR,
      env: clientEnv(t, { TOOLPROF_E2E_MARK: mark }),
      timeout: 60_000,
      maxBuffer: 16 << 20,
    }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') return reject(err); // could not run, or timed out
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
  const deadline = Date.now() + 5000;
  let left = markedProcesses(mark);
  while (left.length && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    left = markedProcesses(mark);
  }
  for (const pid of left) try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ }
  assert.deepEqual(left, [], 'processes the Inspector started are gone after it exits');
  return out;
}

// json parses the Inspector's output, failing with all of it.
function json(run) {
  assert.equal(run.code, 0, `mcp-inspector exit code; stderr:\n${run.stderr}`);
  try {
    return JSON.parse(run.stdout);
  } catch (err) {
    assert.fail(`mcp-inspector output is not JSON (${err.message}):\n${run.stdout}\nstderr:\n${run.stderr}`);
  }
}

// stdioTarget is the server's command line for the Inspector to start.
function stdioTarget(t, flags = []) {
  return [SERVER, '--profiles', PROFILES_FILE, '--telemetry', tempDir(t), ...flags, EVERYTHING];
}

test('inspector --cli over stdio', async (t) => {
  await t.test(`tools/list: the default profile's tools (${DEFAULT_PROFILE})`, async (t) => {
    const res = json(await inspector(t, ['--method', 'tools/list', ...stdioTarget(t)]));
    assert.deepEqual(res.tools.map((x) => x.name).sort(), membership(DEFAULT_PROFILE));
    assert.equal(res.nextCursor, undefined);
  });
  await t.test('tools/list with the server started --profile standard', async (t) => {
    const res = json(await inspector(t, ['--method', 'tools/list', ...stdioTarget(t, ['--profile', 'standard', '--page-size', String(PAGE_SIZE)])]));
    assert.deepEqual(res.tools.map((x) => x.name).sort(), membership('standard'), 'a client that does not page gets every tool, whatever the page size');
  });
  await t.test('tools/call test_simple_text (allowed)', async (t) => {
    const res = json(await inspector(t, ['--method', 'tools/call', '--tool-name', 'test_simple_text', ...stdioTarget(t)]));
    assert.ok(!res.isError, JSON.stringify(res));
    assert.deepEqual(res.content, [{ type: 'text', text: SIMPLE_TEXT }]);
  });
  await t.test('tools/call test_audio_content (refused with the envelope)', async (t) => {
    const res = json(await inspector(t, ['--method', 'tools/call', '--tool-name', 'test_audio_content', ...stdioTarget(t)]));
    assertRefused(res, { tool: 'test_audio_content', profile: DEFAULT_PROFILE });
  });
  await t.test('tools/call no_such_tool (unknown: JSON-RPC -32602, exit 1)', async (t) => {
    const run = await inspector(t, ['--method', 'tools/call', '--tool-name', 'no_such_tool', ...stdioTarget(t)]);
    assert.equal(run.code, 1, `exit code; stdout:\n${run.stdout}`);
    assert.match(run.stderr, /-32602/);
    assert.match(run.stderr, /no_such_tool/);
  });
});

test('inspector --cli over streamable HTTP (/mcp)', async (t) => {
  const server = await startHTTP(t);
  const url = `${server.base}/mcp`;
  await t.test('tools/list', async (t) => {
    const res = json(await inspector(t, ['--method', 'tools/list', url]));
    assert.deepEqual(res.tools.map((x) => x.name).sort(), membership(DEFAULT_PROFILE));
  });
  await t.test('tools/call test_simple_text (allowed)', async (t) => {
    const res = json(await inspector(t, ['--method', 'tools/call', '--tool-name', 'test_simple_text', url]));
    assert.deepEqual(res.content, [{ type: 'text', text: SIMPLE_TEXT }]);
  });
  await t.test('tools/call test_audio_content (refused with the envelope)', async (t) => {
    const res = json(await inspector(t, ['--method', 'tools/call', '--tool-name', 'test_audio_content', url]));
    assertRefused(res, { tool: 'test_audio_content', profile: DEFAULT_PROFILE });
  });
});

// The Inspector 0.15.0 CLI cannot reach /mcp/NAME: it rewrites an HTTP URL's
// path to /mcp (and, without --transport http, takes the URL for SSE). The
// way to show it another profile is the server's --profile, which sets what
// /mcp serves.
test('inspector --cli over streamable HTTP: --profile standard sets what /mcp serves', async (t) => {
  const server = await startHTTP(t, { flags: ['--profile', 'standard'] });
  const res = json(await inspector(t, ['--method', 'tools/list', `${server.base}/mcp`]));
  assert.deepEqual(res.tools.map((x) => x.name).sort(), membership('standard'));
});
