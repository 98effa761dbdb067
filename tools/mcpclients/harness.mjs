// What every client script shares with internal/mcpclienttest, which runs
// them: the plan on stdin, the API key, what is observed on the wire, and
// the one JSON document printed on stdout.
//
//   node CLIENT.mjs MCP_URL < plan.json      (FLOWDROP_API_KEY set: sent as a bearer credential)
//
// plan.json is {"calls": [{"id", "tool", "arguments"}]}. The script connects
// with the SDK's defaults, lists the tools and makes each call the way an
// agent built on that SDK would, then prints
//   {"protocolVersions", "tools", "calls": [{"id", "modelText", "isError", "meta", "error"}]}
// where modelText is what the SDK gives the model for the call. When the
// SDK cannot connect or list it prints {"error": {"name", "message"}} and
// exits with status 2.
import { readFileSync } from "node:fs";

export const url = process.argv[2];
export const plan = JSON.parse(readFileSync(0, "utf8"));

// The headers an agent adds for a gateway with authentication on (none
// for auth.mode off).
export const apiKey = process.env.FLOWDROP_API_KEY;
export const authHeaders = apiKey ? { Authorization: `Bearer ${apiKey}` } : {};

// Every MCP-Protocol-Version a request carried: the revision the SDK
// negotiated, read off the wire, as not every SDK exposes it. Wrapping the
// global fetch observes requests without changing any SDK setting.
const protocolVersions = new Set();
const fetchAsSent = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
  const v = headers.get("mcp-protocol-version");
  if (v) protocolVersions.add(v);
  return fetchAsSent(input, init);
};

// describe returns an error as the test reads it.
export function describe(err) {
  return { name: err?.name ?? typeof err, message: String(err?.message ?? err) };
}

// run runs main (which returns {tools, calls}) and prints the document.
export async function run(main) {
  let out;
  try {
    out = { ...(await main()), protocolVersions: [...protocolVersions].sort() };
  } catch (err) {
    out = { error: describe(err) };
    process.exitCode = 2;
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}

// textOf joins the text blocks of an MCP result's content.
export function textOf(content) {
  return (content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}
