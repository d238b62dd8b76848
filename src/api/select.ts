// SelectObjectContent: a SQL query over a CSV or JSON object, answered as an event stream.
// Errors before the first message are ordinary XML errors; after it, an error message ends the
// stream (the status line is already sent).
import { S3Error } from "../http/errors.ts";
import { log } from "../log.ts";
import { checkQuery, runSelect } from "../select/engine.ts";
import { errorMessage } from "../select/event_stream.ts";
import { MAX_EXPRESSION } from "../select/limits.ts";
import { parseQuery } from "../select/parser.ts";
import { parseSelectRequest } from "../select/request.ts";
import type { Handler } from "./context.ts";
import { readKey } from "./encryption.ts";
import { readableVersion } from "./object_access.ts";

/** The request document: the expression's limit plus room for XML escaping and the rest. */
const MAX_REQUEST = 4 * MAX_EXPRESSION + 64 * 1024;

export const selectObjectContent: Handler = async (ctx) => {
  if (ctx.query.get("select-type") !== "2") {
    throw new S3Error("InvalidArgument", "select-type must be 2.", {
      details: { ArgumentName: "select-type", ArgumentValue: ctx.query.get("select-type") ?? "" },
    });
  }
  const req = parseSelectRequest(await ctx.body.text(MAX_REQUEST));
  const query = parseQuery(req.expression);
  checkQuery(req, query);
  const version = await readableVersion(ctx, { permission: "READ" });
  const key = await readKey(ctx, version);
  const messages = runSelect(req, query, {
    size: version.size,
    open: async (range) => (await ctx.layer.openObject(version, range, key)).body,
  });
  // Until the first message (records, or a keep-alive after a second) errors are XML errors.
  const first = await messages.next();
  let pending: Uint8Array | undefined = first.done ? undefined : first.value;
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (pending) {
        controller.enqueue(pending);
        pending = undefined;
        return;
      }
      try {
        const next = await messages.next();
        if (next.done) controller.close();
        else controller.enqueue(next.value);
      } catch (err) {
        const s3 = err instanceof S3Error ? err : undefined;
        if (!s3) {
          log("error", "Select failed mid-stream", {
            requestId: ctx.requestId,
            error: err instanceof Error ? err.stack ?? err.message : String(err),
          });
        }
        controller.enqueue(
          errorMessage(
            s3?.code ?? "InternalError",
            s3?.message ?? "We encountered an internal error.",
          ),
        );
        controller.close();
      }
    },
    async cancel() {
      await messages.return(undefined);
    },
  });
  return { status: 200, headers: { "content-type": "application/octet-stream" }, body };
};
