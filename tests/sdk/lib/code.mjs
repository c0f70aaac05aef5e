// A small code-interpreter client over execd's /code API, built from the
// official SDK's parts: the endpoint it resolves for port 44772 (with its
// headers), its execd OpenAPI client for the JSON routes, and its
// ExecutionEventDispatcher for the SSE stream of POST /code. The JS SDK
// 0.1.11 has no code-interpreter client of its own.
import { ExecutionEventDispatcher, SandboxApiException, SandboxError } from "@alibaba-group/opensandbox";
import { createExecdClient } from "@alibaba-group/opensandbox/internal";

function apiError(what, response, body) {
  const parsed = body && typeof body === "object" ? body : undefined;
  return new SandboxApiException({
    message: `${what} failed (status=${response.status}): ${parsed?.message ?? JSON.stringify(body)}`,
    statusCode: response.status,
    requestId: response.headers.get("x-request-id") ?? undefined,
    error: new SandboxError(parsed?.code ?? SandboxError.UNEXPECTED_RESPONSE, parsed?.message ?? ""),
    rawBody: body,
  });
}

/** Events of an SSE response: raw `{json}\n\n` or `data: {json}` lines. */
async function* jsonEvents(res) {
  const decoder = new TextDecoder();
  let buf = "";
  for await (const chunk of res.body) {
    buf += decoder.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      let line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (!line || line.startsWith(":") || /^(event|id|retry):/.test(line)) continue;
      if (line.startsWith("data:")) line = line.slice(5).trim();
      try {
        yield JSON.parse(line);
      } catch {
        // not an event line
      }
    }
  }
}

export async function codeClient(sandbox, apiKey) {
  const ep = await sandbox.getEndpoint(44772);
  const baseUrl = await sandbox.getEndpointUrl(44772);
  const headers = { ...(apiKey ? { "OPEN-SANDBOX-API-KEY": apiKey } : {}), ...(ep.headers ?? {}) };
  const raw = createExecdClient({ baseUrl, headers });

  return {
    raw,
    async createContext(language, cwd) {
      const { data, error, response } = await raw.POST("/code/context", { body: { language, ...(cwd ? { cwd } : {}) } });
      if (error || !data?.id) throw apiError("create code context", response, error ?? data);
      return data;
    },
    async listContexts(language) {
      const { data, error, response } = await raw.GET("/code/contexts", { params: { query: language ? { language } : {} } });
      if (error) throw apiError("list code contexts", response, error);
      return data;
    },
    async getContext(id) {
      const { data, error, response } = await raw.GET("/code/contexts/{context_id}", { params: { path: { context_id: id } } });
      if (error) throw apiError("get code context", response, error);
      return data;
    },
    async deleteContext(id) {
      const { error, response } = await raw.DELETE("/code/contexts/{context_id}", { params: { path: { context_id: id } } });
      if (error) throw apiError("delete code context", response, error);
    },
    /** Runs code in a context; returns the SDK's Execution shape. */
    async run(contextId, code, handlers) {
      const res = await fetch(`${baseUrl}/code`, {
        method: "POST",
        headers: { ...headers, accept: "text/event-stream", "content-type": "application/json" },
        body: JSON.stringify({ code, context: { id: contextId } }),
      });
      if (!res.ok) {
        const text = await res.text();
        let body = text;
        try { body = JSON.parse(text); } catch { /* keep the text */ }
        throw apiError("run code", res, body);
      }
      const execution = { logs: { stdout: [], stderr: [] }, result: [] };
      const dispatcher = new ExecutionEventDispatcher(execution, handlers);
      for await (const ev of jsonEvents(res)) await dispatcher.dispatch(ev);
      return execution;
    },
  };
}
