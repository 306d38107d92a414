// Two ActivityPub inboxes on loopback that verify requests with Fedify
// (projection/activitypub fedify_test.go): one takes RFC 9421 HTTP Message
// Signatures only, the other draft-cavage only; both check a FEP-8b32
// proof with Fedify's verifyObject when the activity carries one.
//
// Prints one JSON line, {"rfc9421": port, "cavage": port}, then serves
// until stdin closes. GET /log on either port returns every request seen,
// in order: {inbox, scheme, keyId, verified, proof, id, reason}.
import http from "node:http";
import { getDocumentLoader, verifyObject, verifyRequestDetailed } from "@fedify/fedify";
import { Activity } from "@fedify/fedify/vocab";
import { configure } from "@logtape/logtape";

// HERALD_FEDIFY_DEBUG=1 shows Fedify's reasons on stderr.
if (process.env.HERALD_FEDIFY_DEBUG) {
  await configure({
    sinks: { stderr: (r) => process.stderr.write(`${r.category.join(".")}: ${r.message.map(String).join("")}\n`) },
    loggers: [
      { category: "fedify", lowestLevel: "debug", sinks: ["stderr"] },
      { category: ["logtape", "meta"], lowestLevel: "warning", sinks: ["stderr"] },
    ],
  });
}

// Actor and key documents come from the test's own loopback server, which
// Fedify's default loader refuses (a private address); contexts come from
// Fedify's preloaded copies.
const contextLoader = getDocumentLoader();
async function documentLoader(url) {
  const res = await fetch(url, { headers: { Accept: "application/activity+json" } });
  if (!res.ok) throw new Error(`GET ${url}: ${res.status}`);
  return { contextUrl: null, documentUrl: url, document: await res.json() };
}

const log = [];

function inbox(name) {
  return http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    if (req.method === "GET" && req.url === "/log") {
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify(log));
      return;
    }
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
    const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body });
    const scheme = headers.has("Signature-Input") ? "rfc9421" : "cavage";
    const entry = { inbox: name, scheme, verified: false, proof: null, id: null, reason: "" };
    log.push(entry);
    const refuse = (status, reason) => {
      entry.reason = reason;
      res.writeHead(status, { "Content-Type": "text/plain" });
      res.end(reason);
    };
    try {
      if (scheme !== name) return refuse(401, `signature: this inbox verifies ${name} signatures only`);
      const result = await verifyRequestDetailed(request, {
        spec: name === "rfc9421" ? "rfc9421" : "draft-cavage-http-signatures-12",
        documentLoader,
        contextLoader,
      });
      if (!result.verified) return refuse(401, `signature: not verified (${result.reason?.type})`);
      entry.verified = true;
      entry.keyId = result.key.id?.href;
      const json = JSON.parse(body.toString("utf8"));
      entry.id = json.id ?? null;
      if (json.proof !== undefined) {
        const object = await verifyObject(Activity, json, { documentLoader, contextLoader });
        entry.proof = object !== null;
        if (!entry.proof) return refuse(400, "proof: not verified");
      }
      res.writeHead(202);
      res.end();
    } catch (e) {
      refuse(500, String(e?.stack ?? e));
    }
  });
}

const servers = { rfc9421: inbox("rfc9421"), cavage: inbox("cavage") };
const ports = {};
for (const [name, server] of Object.entries(servers)) {
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  ports[name] = server.address().port;
}
process.stdout.write(JSON.stringify(ports) + "\n");
process.stdin.resume();
process.stdin.on("end", () => process.exit(0));
process.stdin.on("close", () => process.exit(0));
