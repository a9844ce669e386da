// Tool groups (issue 9) through the official TypeScript SDK client: a session
// of profile "grouped" calls enable_tools to switch group "media" on, receives
// notifications/tools/list_changed, and lists (and may call) the group's tools
// from then on; other sessions are untouched; a ceiling still bounds what a
// group can add.
//
// These tests run once this checkout's gateway serves enable_tools (decided
// from its Go source, see groupsServed), and are skipped, with the reason,
// before that.

import assert from 'node:assert/strict';
import { test } from 'node:test';

import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

import { START_CURSOR, assertRefused, membership, pageThrough } from '../lib/checks.mjs';
import { ENABLE_TOOLS, GROUPS } from '../lib/expect.mjs';
import { connectHTTP, connectStdio, groupsServed, names, startHTTP } from '../lib/harness.mjs';

const skip = groupsServed()
  ? false
  : `the gateway does not serve ${ENABLE_TOOLS} yet (no reference to it in gateway/ or cmd/server/; tool groups are issue 9)`;

const PROFILE = 'grouped';
const GROUP = 'media';
const AUDIO = 'test_audio_content'; // in the group, not in the profile

// listChanged returns a promise of the next tools/list_changed notification
// the client receives, failing after ms, and a count of those received.
function watchListChanged(client, ms = 10_000) {
  const seen = { count: 0 };
  let resolve;
  const next = new Promise((r) => { resolve = r; });
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    seen.count++;
    resolve();
  });
  const wait = () => {
    let timer;
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no notifications/tools/list_changed within ${ms} ms`)), ms);
    });
    return Promise.race([next, timeout]).finally(() => clearTimeout(timer));
  };
  return { seen, wait };
}

// switchOn runs the whole switch on one session and its checks.
async function switchOn(t, client) {
  const before = membership(PROFILE);
  const withGroup = [...new Set([...before, ...GROUPS[GROUP].tools])].sort();
  const changed = watchListChanged(client);

  await t.test(`before the switch: ${ENABLE_TOOLS} is listed and describes the group`, async () => {
    const res = await client.listTools();
    assert.deepEqual([...names(res)].sort(), before);
    assert.equal(res.tools[0].name, ENABLE_TOOLS, `${ENABLE_TOOLS} is listed first (docs/errors.md)`);
    const enable = res.tools.find((x) => x.name === ENABLE_TOOLS);
    assert.ok(enable, `${ENABLE_TOOLS} is listed`);
    assert.match(enable.description, new RegExp(`\\b${GROUP}\\b`));
    assert.ok(enable.inputSchema.properties?.group, `${ENABLE_TOOLS} takes a group: ${JSON.stringify(enable.inputSchema)}`);
  });

  await t.test(`before the switch: ${AUDIO} is refused, naming the group to enable`, async () => {
    const res = await client.callTool({ name: AUDIO, arguments: {} });
    assertRefused(res, { tool: AUDIO, profile: PROFILE });
    assert.ok(res.structuredContent.suggested_actions.some((a) => new RegExp(`\\b${GROUP}\\b`).test(a)),
      `a suggested action says to enable ${GROUP}: ${JSON.stringify(res.structuredContent.suggested_actions)}`);
  });

  await t.test(`${ENABLE_TOOLS} {group: "${GROUP}"} succeeds and list_changed arrives`, async () => {
    const res = await client.callTool({ name: ENABLE_TOOLS, arguments: { group: GROUP } });
    assert.ok(!res.isError, JSON.stringify(res));
    const text = res.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
    assert.match(text, new RegExp(`\\b${GROUP}\\b`));
    for (const tool of GROUPS[GROUP].tools.filter((x) => !before.includes(x))) {
      assert.match(text, new RegExp(`\\b${tool}\\b`), `the result names the added tool ${tool}`);
    }
    await changed.wait();
  });

  await t.test('after the switch: the group\'s tools are listed, unpaged and paged', async () => {
    const res = await client.listTools();
    assert.deepEqual([...names(res)].sort(), withGroup);
    const pages = await pageThrough(client);
    assert.deepEqual(pages.flatMap((p) => p.tools), res.tools, 'the pages, joined, are the unpaged list');
  });

  await t.test(`after the switch: ${AUDIO} is forwarded`, async () => {
    const res = await client.callTool({ name: AUDIO, arguments: {} });
    assert.ok(!res.isError, JSON.stringify(res));
    assert.equal(res.content[0]?.type, 'audio');
  });

  return changed;
}

test('groups over stdio: a session switches a group on', { skip }, async (t) => {
  const { client } = await connectStdio(t, { flags: ['--profile', PROFILE] });
  await switchOn(t, client);
});

test('groups over HTTP: the switch is per session', { skip }, async (t) => {
  const server = await startHTTP(t);
  const other = await connectHTTP(t, `${server.base}/mcp/${PROFILE}`);
  const otherChanged = watchListChanged(other);
  const client = await connectHTTP(t, `${server.base}/mcp/${PROFILE}`);
  await switchOn(t, client);
  await t.test('another session of the same profile is untouched', async () => {
    assert.deepEqual([...names(await other.listTools())].sort(), membership(PROFILE));
    assertRefused(await other.callTool({ name: AUDIO, arguments: {} }), { tool: AUDIO, profile: PROFILE });
    assert.equal(otherChanged.seen.count, 0, 'the other session got no list_changed');
  });
});

test('groups over HTTP: an unknown group is invalid_arguments and changes nothing', { skip }, async (t) => {
  const server = await startHTTP(t);
  const client = await connectHTTP(t, `${server.base}/mcp/${PROFILE}`);
  const res = await client.callTool({ name: ENABLE_TOOLS, arguments: { group: 'no-such-group' } });
  assert.equal(res.isError, true, JSON.stringify(res));
  assert.equal(res.structuredContent?.code, 'invalid_arguments');
  assert.match(res.structuredContent?.message, new RegExp(`\\b${GROUP}\\b`), 'the message lists the offered groups');
  assert.deepEqual([...names(await client.listTools())].sort(), membership(PROFILE));
});

test('groups over stdio: switching on a group already on is a success that changes nothing', { skip }, async (t) => {
  const { client } = await connectStdio(t, { flags: ['--profile', PROFILE] });
  const first = await client.callTool({ name: ENABLE_TOOLS, arguments: { group: GROUP } });
  assert.ok(!first.isError, JSON.stringify(first));
  const listed = await client.listTools();
  const again = await client.callTool({ name: ENABLE_TOOLS, arguments: { group: GROUP } });
  assert.ok(!again.isError, JSON.stringify(again));
  assert.deepEqual(await client.listTools(), listed);
});

// Paging stays consistent across a switch: the listing is append-only, so a
// cursor issued before the switch pages on through the rest of the old list
// and then the group's tools, each once.
test('groups over stdio: a cursor from before the switch pages on through the new tools (--page-size 1)', { skip }, async (t) => {
  const { client } = await connectStdio(t, { flags: ['--profile', PROFILE, '--page-size', '1'] });
  const firstPage = await client.listTools({ cursor: START_CURSOR });
  assert.equal(firstPage.tools.length, 1);
  assert.ok(firstPage.nextCursor, 'a profile of two or more tools has a second page at page size 1');
  const res = await client.callTool({ name: ENABLE_TOOLS, arguments: { group: GROUP } });
  assert.ok(!res.isError, JSON.stringify(res));
  const rest = [];
  for (let cursor = firstPage.nextCursor; cursor;) {
    const page = await client.listTools({ cursor });
    assert.ok(page.tools.length <= 1);
    rest.push(...page.tools);
    cursor = page.nextCursor;
    assert.ok(rest.length < 100, 'nextCursor never ends');
  }
  const after = await client.listTools();
  assert.deepEqual([...firstPage.tools, ...rest], after.tools, 'first page (before) + the rest (after) = the list after the switch, in order');
  for (const tool of GROUPS[GROUP].tools) assert.ok(rest.some((x) => x.name === tool), `${tool} reached through the old cursor`);
});

test('groups over HTTP: the ceiling bounds a group (--max-profile core)', { skip }, async (t) => {
  const server = await startHTTP(t, { flags: ['--max-profile', 'core'] });
  const client = await connectHTTP(t, `${server.base}/mcp/${PROFILE}`);
  // The whole switch is refused: the group would add a tool outside core.
  const refusal = await client.callTool({ name: ENABLE_TOOLS, arguments: { group: GROUP } });
  assert.equal(refusal.isError, true, JSON.stringify(refusal));
  assert.equal(refusal.structuredContent?.code, 'group_not_allowed');
  assert.equal(refusal.structuredContent?.category, 'policy');
  assert.match(refusal.structuredContent?.message, new RegExp(`"${AUDIO}"`), 'the refusal names the tool beyond the ceiling');
  assert.ok(!names(await client.listTools()).includes(AUDIO), `${AUDIO} (outside core) is never listed`);
  const res = await client.callTool({ name: AUDIO, arguments: {} });
  assert.equal(res.isError, true, JSON.stringify(res));
  assert.equal(res.structuredContent?.code, 'tool_not_in_profile');
});

// The SDK's own reaction to list_changed (Client option listChanged, which
// re-lists and hands over the new tools) is how applications built on it see
// a switch.
for (const transport of ['stdio', 'HTTP']) {
  test(`groups over ${transport}: the SDK's listChanged auto-refresh hands over the new list`, { skip }, async (t) => {
    let onChanged;
    const refreshed = new Promise((resolve, reject) => {
      onChanged = (err, tools) => (err ? reject(err) : resolve(tools));
    });
    const clientOptions = { listChanged: { tools: { onChanged, debounceMs: 0 } } };
    let client;
    if (transport === 'stdio') {
      ({ client } = await connectStdio(t, { flags: ['--profile', PROFILE], clientOptions }));
    } else {
      const server = await startHTTP(t);
      client = await connectHTTP(t, `${server.base}/mcp/${PROFILE}`, clientOptions);
    }
    assert.equal(client.getServerCapabilities()?.tools?.listChanged, true, 'the server advertises tools.listChanged');
    const res = await client.callTool({ name: ENABLE_TOOLS, arguments: { group: GROUP } });
    assert.ok(!res.isError, JSON.stringify(res));
    let timer;
    const tools = await Promise.race([
      refreshed,
      new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('the SDK did not re-list within 10 s')), 10_000); }),
    ]).finally(() => clearTimeout(timer));
    const want = [...new Set([...membership(PROFILE), ...GROUPS[GROUP].tools])].sort();
    assert.deepEqual(tools.map((x) => x.name).sort(), want);
  });
}
