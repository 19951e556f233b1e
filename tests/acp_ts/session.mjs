#!/usr/bin/env node
// One scripted editor session against an ACP agent, written with the official TypeScript
// SDK (@agentclientprotocol/sdk, its client app API) the way an editor would use it.
//
//   node session.mjs <agent command> [args...]      (cwd: the project to open)
//
// Connection 1: initialize (no fs, no terminal), session/new in the cwd, wait for the
// advertised commands (compact among them), prompt "make the greeting" (the scripted
// model writes greeting.txt and runs a bash echo; both ask permission and get allow once),
// then "/context" and "/fork <the messageId of a chunk>", then "/compact" (a "Compact
// conversation" think tool call, then a smaller usage).
// Connection 2 (a new agent process): session/list, session/load (the history replayed
// before the response, the user's message first), session/close.
//
// ACP_TS_COMPACTION=1: the client declares the `session.compaction` capability, and
// /compact (and its replay) must come as `compaction_update` (in_progress, then completed
// with the summary) instead of the tool call.
//
// Prints one JSON summary on stdout; any mismatch exits 1 with the reason on stderr.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const CLIENT_INFO = {
  name: "agent-tui-ts-test",
  title: "agent-tui TypeScript test client",
  version: "1.0.0",
};
const WAIT_SECONDS = 60; // a safety net that names what never came, not a timing check
const FIRST_PROMPT = "make the greeting";
const DEBUG = Boolean(process.env.ACP_TS_DEBUG); // the wire, as received, on stderr
const COMPACTION = Boolean(process.env.ACP_TS_COMPACTION); // declares session.compaction

const SDK_VERSION = JSON.parse(
  readFileSync(new URL("./node_modules/@agentclientprotocol/sdk/package.json", import.meta.url)),
).version;

class Mismatch extends Error {}

function check(condition, message, detail) {
  if (!condition) {
    const shown = detail === undefined ? "" : `\n  got: ${JSON.stringify(detail)}`;
    throw new Mismatch(message + shown);
  }
}

/** The agent as a child process, its stdio as an ACP stream (stderr passes through). */
function startAgent(argv, cwd) {
  const child = spawn(argv[0], argv.slice(1), { cwd, stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve, reject) => {
    child.on("error", (error) =>
      reject(new Mismatch(`cannot start the agent ${JSON.stringify(argv)}: ${error.message}`)),
    );
    child.on("exit", (code, signal) => resolve({ code, signal }));
  });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  // The wire order of everything received, before the SDK parses it.
  const wire = [];
  const readable = stream.readable.pipeThrough(
    new TransformStream({
      transform(message, controller) {
        wire.push(message);
        if (DEBUG) process.stderr.write(`<- ${JSON.stringify(message).slice(0, 400)}\n`);
        controller.enqueue(message);
      },
    }),
  );
  return { child, exited, wire, stream: { writable: stream.writable, readable } };
}

async function stopAgent(agent) {
  agent.child.stdin.end(); // EOF: the agent finishes and exits
  let timer;
  const killed = new Promise((resolve) => {
    timer = setTimeout(() => {
      agent.child.kill("SIGKILL");
      resolve({ code: null, signal: "SIGKILL (did not exit on EOF)" });
    }, WAIT_SECONDS * 1000);
  });
  const result = await Promise.race([agent.exited, killed]);
  clearTimeout(timer);
  return result;
}

/** Every session/update the SDK accepted, with a way to wait for one. */
class Updates {
  constructor() {
    this.all = [];
    this.waiters = [];
  }

  add(notification) {
    this.all.push(notification);
    this.waiters = this.waiters.filter((waiter) => !waiter());
  }

  of(sessionId, kind) {
    return this.all
      .filter((n) => n.sessionId === sessionId && (!kind || n.update.sessionUpdate === kind))
      .map((n) => n.update);
  }

  waitFor(what, found) {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        const kinds = this.all.map((n) => n.update.sessionUpdate);
        reject(new Mismatch(`no ${what} within ${WAIT_SECONDS} s; updates so far: ${kinds}`));
      }, WAIT_SECONDS * 1000);
      const waiter = () => {
        const value = found();
        if (value) {
          clearTimeout(timer);
          resolve(value);
          return true;
        }
        return false;
      };
      if (!waiter()) this.waiters.push(waiter);
    });
  }
}

/** The client app an editor would build: it shows updates and answers permission
 * requests (here: the option of kind allow_once, picked by kind as the spec says). */
function editorApp(updates, permissions) {
  return acp
    .client({ name: CLIENT_INFO.name })
    .onNotification(acp.methods.client.session.update, ({ params }) => updates.add(params))
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      const option = params.options.find((o) => o.kind === "allow_once");
      permissions.push({ ...params, chosen: option?.optionId ?? null });
      if (!option) return { outcome: { outcome: "cancelled" } };
      return { outcome: { outcome: "selected", optionId: option.optionId } };
    });
}

async function initialize(agent) {
  return agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {
      fs: { readTextFile: false, writeTextFile: false },
      terminal: false,
      ...(COMPACTION ? { session: { compaction: {} } } : {}),
    },
    clientInfo: CLIENT_INFO,
  });
}

/** The updates of one prompt turn, in the order they came, and its stop reason. */
async function turn(session, prompt) {
  const response = session.prompt(prompt);
  response.catch(() => {}); // a failed prompt also rejects nextUpdate(), which reports it
  const seen = [];
  for (;;) {
    const message = await next(session, `the end of the turn "${prompt}"`);
    if (message.kind === "stop") {
      await response;
      return { stopReason: message.stopReason, updates: seen };
    }
    seen.push(message.update);
  }
}

function textOf(updates, kind = "agent_message_chunk") {
  return updates
    .filter((u) => u.sessionUpdate === kind && u.content.type === "text")
    .map((u) => u.content.text)
    .join("");
}

/** Each tool call: its start and every update merged, as an editor's tool card. */
function toolCards(updates) {
  const cards = new Map();
  for (const u of updates) {
    if (u.sessionUpdate !== "tool_call" && u.sessionUpdate !== "tool_call_update") continue;
    const card = cards.get(u.toolCallId) ?? { toolCallId: u.toolCallId, statuses: [] };
    if (u.sessionUpdate === "tool_call") card.started = true;
    for (const key of ["title", "kind", "rawInput", "rawOutput", "locations"]) {
      if (u[key] !== undefined && u[key] !== null) card[key] = u[key];
    }
    if (u.content) card.content = u.content;
    if (u.status) card.statuses.push(u.status);
    cards.set(u.toolCallId, card);
  }
  return [...cards.values()].map((card) => ({
    ...card,
    status: card.statuses.at(-1) ?? null,
    text: (card.content ?? [])
      .filter((c) => c.type === "content" && c.content.type === "text")
      .map((c) => c.content.text)
      .join(""),
    contentTypes: (card.content ?? []).map((c) => c.type),
  }));
}

function usages(updates) {
  return updates
    .filter((u) => u.sessionUpdate === "usage_update")
    .map((u) => ({ used: u.used, size: u.size, cost: u.cost ?? null }));
}

/** Connection 1: new session, a prompt with tool calls and permissions, /compact. */
async function firstConnection(argv, cwd) {
  const updates = new Updates();
  const permissions = [];
  const agentProcess = startAgent(argv, cwd);
  const app = editorApp(updates, permissions);
  const summary = await app.connectWith(agentProcess.stream, async (agent) => {
    const init = await Promise.race([initialize(agent), agentProcess.exited.then(died)]);
    check(init.protocolVersion === 1, "initialize: protocolVersion is not 1", init);
    check(init.agentCapabilities?.loadSession === true, "initialize: no loadSession", init);

    const session = await agent.buildSession(cwd).start();
    const sessionId = session.sessionId;
    check(typeof sessionId === "string" && sessionId, "session/new: no sessionId");
    // Right after session/new: the commands, then the usage so far.
    const opened = await readUntil(session, "available_commands_update and usage_update", (seen) =>
      ["available_commands_update", "usage_update"].every((k) =>
        seen.some((u) => u.sessionUpdate === k),
      ),
    );
    const commands = opened.find((u) => u.sessionUpdate === "available_commands_update");
    const initialUsage = opened.find((u) => u.sessionUpdate === "usage_update");
    const names = commands.availableCommands.map((c) => c.name);
    check(names.includes("compact"), "available_commands_update does not list compact", names);
    const compact = commands.availableCommands.find((c) => c.name === "compact");

    const first = await turn(session, FIRST_PROMPT);
    check(first.stopReason === "end_turn", "the prompt did not end with end_turn", first.stopReason);
    const cards = toolCards(first.updates);
    check(cards.length > 0, "the prompt produced no tool_call");
    for (const c of cards) {
      check(c.started, `tool_call_update ${c.toolCallId} without a tool_call first`, c);
      check(c.status === "completed", `tool call ${c.title} did not complete`, c);
    }
    const turnUsage = usages(first.updates);
    check(turnUsage.length > 0, "no usage_update during the prompt turn");
    for (const u of turnUsage) {
      check(u.used > 0 && u.size > 0 && u.used <= u.size, "usage_update out of range", u);
    }
    for (const p of permissions) {
      const shown = cards.some((c) => c.toolCallId === p.toolCall.toolCallId);
      check(shown, "request_permission for a tool call never shown", p.toolCall);
    }

    // Each agent chunk names its message; /fork takes that id; /context comes as Markdown.
    const messageIds = [
      ...new Set(
        first.updates
          .filter((u) => u.sessionUpdate === "agent_message_chunk")
          .map((u) => u.messageId ?? null),
      ),
    ];
    const context = await turn(session, "/context");
    const forked = await turn(session, `/fork ${messageIds[0]}`);

    const compacted = await turn(session, "/compact");
    check(compacted.stopReason === "end_turn", "/compact did not end with end_turn", compacted);
    const compactCards = toolCards(compacted.updates);
    const compactCard = compactCards.find((c) => c.title === "Compact conversation");
    const compactions = compacted.updates.filter((u) => u.sessionUpdate === "compaction_update");
    let cardAt;
    if (COMPACTION) {
      check(!compactCard, "a 'Compact conversation' tool call despite compaction_update", compactCards);
      const statuses = compactions.map((u) => u.status);
      check(
        statuses.length === 2 && statuses[0] === "in_progress" && statuses[1] === "completed",
        "compaction_update did not go from in_progress to completed",
        compactions,
      );
      check(
        new Set(compactions.map((u) => u.compactionId)).size === 1,
        "the compaction's updates do not share one compactionId",
        compactions,
      );
      const summary = compactions[1].summary ?? [];
      check(summary.length > 0 && summary[0].text, "the completed compaction has no summary", summary);
      cardAt = compacted.updates.indexOf(compactions[1]);
    } else {
      check(compactions.length === 0, "compaction_update without the capability", compactions);
      check(compactCard, "/compact showed no 'Compact conversation' tool call", compactCards);
      check(compactCard.kind === "think", "the compaction tool call is not kind think", compactCard);
      check(
        compactCard.statuses[0] === "in_progress" && compactCard.status === "completed",
        "the compaction did not go from in_progress to completed",
        compactCard.statuses,
      );
      cardAt = compacted.updates.findLastIndex(
        (u) => u.toolCallId === compactCard.toolCallId && u.status === "completed",
      );
    }
    const after = usages(compacted.updates.slice(cardAt + 1));
    check(after.length > 0, "no usage_update after the compaction completed");
    const before = turnUsage.at(-1);
    check(after.at(-1).used < before.used, "usage_update.used did not drop after /compact", {
      before,
      after,
    });
    session.dispose();
    return {
      protocolVersion: init.protocolVersion,
      agentInfo: init.agentInfo ?? null,
      agentCapabilities: init.agentCapabilities,
      sessionId,
      modes: session.modes ?? null,
      configOptions: (session.newSessionResponse.configOptions ?? []).map((o) => ({
        id: o.id,
        category: o.category ?? null,
        currentValue: o.currentValue,
      })),
      commands: names,
      compactHint: compact.input?.hint ?? null,
      initialUsage: { used: initialUsage.used, size: initialUsage.size },
      prompt: {
        stopReason: first.stopReason,
        kinds: first.updates.map((u) => u.sessionUpdate),
        text: textOf(first.updates),
        toolCalls: cards.map(card),
        usage: turnUsage,
        messageIds,
      },
      contextText: textOf(context.updates),
      forkText: textOf(forked.updates),
      permissions: permissions.map((p) => ({
        toolCallId: p.toolCall.toolCallId,
        title: p.toolCall.title ?? null,
        kind: p.toolCall.kind ?? null,
        options: p.options.map((o) => o.kind),
        chosen: p.chosen,
        content: (p.toolCall.content ?? []).map((c) =>
          c.type === "diff"
            ? { type: "diff", path: c.path, oldText: c.oldText ?? null, newText: c.newText }
            : c.type === "content" && c.content.type === "text"
              ? { type: "text", text: c.content.text }
              : { type: c.type },
        ),
      })),
      compact: {
        stopReason: compacted.stopReason,
        toolCall: compactCard ? card(compactCard) : null,
        compactionUpdates: compactions.map((u) => ({
          compactionId: u.compactionId,
          status: u.status,
          summary: (u.summary ?? []).map((b) => b.text).join(""),
        })),
        usageBefore: before,
        usageAfter: after,
      },
    };
  });
  const exit = await stopAgent(agentProcess);
  return { summary, exit, rejected: rejectedUpdates(agentProcess.wire, updates) };
}

function card(c) {
  return {
    toolCallId: c.toolCallId,
    title: c.title ?? null,
    kind: c.kind ?? null,
    statuses: c.statuses,
    status: c.status,
    text: c.text,
    contentTypes: c.contentTypes,
    locations: (c.locations ?? []).map((l) => l.path),
    rawInput: c.rawInput ?? null,
  };
}

/** An active session's next message; a safety net names what never came. */
async function next(session, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(
      () => reject(new Mismatch(`no ${what} within ${WAIT_SECONDS} s`)),
      WAIT_SECONDS * 1000,
    );
  });
  try {
    return await Promise.race([session.nextUpdate(), late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Updates of an active session (outside a prompt turn) until `done(seen)`. */
async function readUntil(session, what, done) {
  const seen = [];
  while (!done(seen)) {
    const message = await next(session, what);
    check(message.kind === "session_update", `a stop while waiting for ${what}`, message);
    seen.push(message.update);
  }
  return seen;
}

function died(exit) {
  throw new Mismatch(`the agent exited before answering initialize: ${JSON.stringify(exit)}`);
}

/** The kinds of session/update notifications on the wire that the SDK's schema refused
 * (it logs and drops them, so an editor would never show them). */
function rejectedUpdates(wire, updates) {
  const left = new Map();
  for (const n of updates.all) {
    const kind = n.update.sessionUpdate;
    left.set(kind, (left.get(kind) ?? 0) + 1);
  }
  const rejected = [];
  for (const m of wire) {
    if (m.method !== acp.methods.client.session.update) continue;
    const kind = m.params?.update?.sessionUpdate ?? "?";
    if (left.get(kind)) left.set(kind, left.get(kind) - 1);
    else rejected.push({ kind, update: m.params?.update ?? null });
  }
  return rejected;
}

/** Connection 2, a new agent process: list, load (replayed history), close. */
async function secondConnection(argv, cwd, sessionId) {
  const updates = new Updates();
  const permissions = [];
  const agentProcess = startAgent(argv, cwd);
  const app = editorApp(updates, permissions);
  const summary = await app.connectWith(agentProcess.stream, async (agent) => {
    const init = await Promise.race([initialize(agent), agentProcess.exited.then(died)]);
    const sessions = init.agentCapabilities?.sessionCapabilities ?? {};
    let listed = null;
    if (sessions.list) {
      const found = await agent.request(acp.methods.agent.session.list, { cwd });
      listed = found.sessions.map((s) => ({ sessionId: s.sessionId, cwd: s.cwd, title: s.title }));
      check(
        listed.some((s) => s.sessionId === sessionId),
        "session/list does not list the session",
        listed,
      );
    }
    const loadedAt = agentProcess.wire.length;
    await agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
    const responseAt = agentProcess.wire.findIndex(
      (m, i) => i >= loadedAt && !("method" in m) && "result" in m,
    );
    // Replayed updates are those the wire carried before session/load's response.
    const replayedOnWire = agentProcess.wire
      .slice(loadedAt, responseAt)
      .filter((m) => m.method === acp.methods.client.session.update)
      .map((m) => m.params.update.sessionUpdate);
    // Right after the response, as after session/new: the commands, the usage so far.
    await updates.waitFor("available_commands_update and usage_update after session/load", () =>
      ["available_commands_update", "usage_update"].every(
        (kind) => updates.of(sessionId, kind).length > 0,
      ),
    );
    const all = updates.of(sessionId);
    const replayed = all.slice(0, replayedOnWire.length);
    check(replayed.length > 0, "session/load replayed nothing");
    check(
      replayed[0].sessionUpdate === "user_message_chunk",
      "the replay does not start with user_message_chunk",
      replayedOnWire,
    );
    check(
      textOf(replayed, "user_message_chunk") === FIRST_PROMPT,
      "the replayed user message is not the first prompt",
      textOf(replayed, "user_message_chunk"),
    );
    let closed = false;
    if (sessions.close) {
      await agent.request(acp.methods.agent.session.close, { sessionId });
      closed = true;
    }
    return {
      listed,
      load: {
        kinds: replayedOnWire,
        userText: textOf(replayed, "user_message_chunk"),
        agentText: textOf(replayed),
        toolCalls: toolCards(replayed).map(card),
        afterResponse: all.slice(replayed.length).map((u) => u.sessionUpdate),
      },
      closed,
    };
  });
  const exit = await stopAgent(agentProcess);
  return { summary, exit, rejected: rejectedUpdates(agentProcess.wire, updates) };
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv.length === 0) {
    process.stderr.write("usage: node session.mjs <agent command> [args...]\n");
    return 2;
  }
  const cwd = process.cwd();
  const first = await firstConnection(argv, cwd);
  const second = await secondConnection(argv, cwd, first.summary.sessionId);
  const summary = {
    sdk: { name: "@agentclientprotocol/sdk", version: SDK_VERSION },
    ...first.summary,
    ...second.summary,
    exits: [first.exit, second.exit],
    rejectedUpdates: [...first.rejected, ...second.rejected],
  };
  check(summary.rejectedUpdates.length === 0, "the SDK refused updates", summary.rejectedUpdates);
  process.stdout.write(JSON.stringify(summary, null, 2) + "\n");
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error) => {
    const text = error instanceof Mismatch ? error.message : (error?.stack ?? String(error));
    process.stderr.write(`session.mjs: ${text}\n`);
    if (error?.data !== undefined) process.stderr.write(`  data: ${JSON.stringify(error.data)}\n`);
    process.exit(1);
  },
);
