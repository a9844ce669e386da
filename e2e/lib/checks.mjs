// The checks every transport runs on a session of one profile, as node:test
// subtests of the caller's test.

import assert from 'node:assert/strict';

import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';

import { ENABLE_TOOLS, PAGE_SIZE, PROFILES, SIMPLE_TEXT, profilesWith } from './expect.mjs';
import { groupsServed, names } from './harness.mjs';

// START_CURSOR is the cursor that starts paging (gateway.StartCursor).
export const START_CURSOR = 'start';

// membership is the exact set of tools a fresh session of profile lists:
// its tools, plus enable_tools when it offers groups and the gateway serves them.
export function membership(profile) {
  const p = PROFILES[profile];
  const tools = [...p.tools];
  if (p.groups.length > 0 && groupsServed()) tools.push(ENABLE_TOOLS);
  return tools.sort();
}

// assertNoDuplicates fails if list names a tool twice.
function assertNoDuplicates(list, what) {
  const seen = new Set();
  for (const n of list) {
    assert.ok(!seen.has(n), `${what}: tool ${n} listed twice`);
    seen.add(n);
  }
}

// pageThrough lists every page from the start cursor, asserting the page
// shapes on the way, and returns the pages.
export async function pageThrough(client, pageSize = PAGE_SIZE) {
  const pages = [];
  let cursor = START_CURSOR;
  for (;;) {
    const res = await client.listTools({ cursor });
    pages.push(res);
    assert.ok(pages.length <= 1000, 'nextCursor never ends');
    if (res.nextCursor === undefined) break;
    assert.equal(typeof res.nextCursor, 'string', 'nextCursor is a string');
    assert.notEqual(res.nextCursor, '', 'nextCursor is not empty');
    assert.equal(res.tools.length, pageSize, `page ${pages.length} has a nextCursor, so it is full (${pageSize} tools)`);
    cursor = res.nextCursor;
  }
  const last = pages.at(-1);
  assert.ok(last.tools.length <= pageSize, `last page holds at most ${pageSize} tools, got ${last.tools.length}`);
  return pages;
}

// assertRefused checks the tool_not_in_profile envelope of a refused call.
export function assertRefused(res, { tool, profile }) {
  assert.equal(res.isError, true, `call of ${tool} under ${profile} is an error result`);
  const env = res.structuredContent;
  assert.ok(env && typeof env === 'object', `structuredContent carries the envelope; result: ${JSON.stringify(res)}`);
  assert.equal(env.code, 'tool_not_in_profile');
  assert.equal(env.category, 'policy');
  assert.equal(env.retryable, false);
  assert.match(env.message, new RegExp(`"${tool}"`), 'the message names the tool');
  assert.match(env.message, new RegExp(`"${profile}"`), 'the message names the active profile');
  const with_ = profilesWith(tool);
  for (const p of with_) {
    assert.match(env.message, new RegExp(`\\b${p}\\b`), `the message names profile ${p}, which includes ${tool}`);
    assert.ok(env.suggested_actions.some((a) => a.includes(`"${p}"`)), `a suggested action names profile ${p}: ${JSON.stringify(env.suggested_actions)}`);
  }
  const text = res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  assert.ok(text.includes(env.message), 'the text content carries the message for text-only clients');
  assert.ok(text.includes('tool_not_in_profile'), 'the text content carries the code');
}

// assertInvalidParams checks that promise rejects with JSON-RPC -32602.
export async function assertInvalidParams(promise, mentions) {
  await assert.rejects(promise, (err) => {
    assert.equal(err.code, ErrorCode.InvalidParams, `JSON-RPC error code; got ${err.code}: ${err.message}`);
    assert.equal(ErrorCode.InvalidParams, -32602);
    if (mentions) assert.match(err.message, mentions);
    return true;
  });
}

// checkProfile runs, as subtests of t, every check of a session of profile.
export async function checkProfile(t, client, profile) {
  const want = PROFILES[profile];
  const members = membership(profile);

  await t.test('instructions are the profile\'s', () => {
    assert.equal(client.getInstructions(), want.instructions);
  });

  let unpaged;
  await t.test('tools/list without a cursor: every tool, no nextCursor', async () => {
    unpaged = await client.listTools();
    assert.equal(unpaged.nextCursor, undefined, 'no nextCursor without a cursor');
    assertNoDuplicates(names(unpaged), 'unpaged list');
    assert.deepEqual([...names(unpaged)].sort(), members);
  });

  await t.test(`tools/list from cursor "${START_CURSOR}": pages of ${PAGE_SIZE} to the end`, async () => {
    const pages = await pageThrough(client);
    assert.equal(pages.length, Math.max(1, Math.ceil(members.length / PAGE_SIZE)), 'page count');
    const all = pages.flatMap((p) => p.tools);
    assertNoDuplicates(all.map((x) => x.name), 'paged list');
    // Stable order: the pages, joined, are the unpaged list, definitions included.
    assert.deepEqual(all, unpaged.tools);
  });

  await t.test('a malformed cursor is JSON-RPC -32602', async () => {
    await assertInvalidParams(client.listTools({ cursor: 'not-a-cursor!' }), /cursor/);
  });

  await t.test('an allowed call is forwarded (test_simple_text)', async () => {
    assert.ok(members.includes('test_simple_text'));
    const res = await client.callTool({ name: 'test_simple_text', arguments: {} });
    assert.ok(!res.isError, `not an error: ${JSON.stringify(res)}`);
    assert.deepEqual(res.content, [{ type: 'text', text: SIMPLE_TEXT }]);
  });

  if (want.refused) {
    await t.test(`a call outside the profile is refused with the envelope (${want.refused})`, async () => {
      assert.ok(!members.includes(want.refused));
      const res = await client.callTool({ name: want.refused, arguments: {} });
      assertRefused(res, { tool: want.refused, profile });
    });
  }

  await t.test('an unknown tool is JSON-RPC -32602', async () => {
    await assertInvalidParams(client.callTool({ name: 'no_such_tool', arguments: {} }), /no_such_tool/);
  });
}
