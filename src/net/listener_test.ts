// The accept loop survives running out of descriptors: accept errors are logged and retried,
// never thrown, and the server answers again once descriptors are free.
const CHILD = new URL("./testdata/serve_child.ts", import.meta.url).pathname;

function assert(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

Deno.test("an accept error (out of descriptors) never ends the process", async () => {
  const child = new Deno.Command("prlimit", {
    args: ["--nofile=64:64", "--", Deno.execPath(), "run", "-A", CHILD],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const decoder = new TextDecoder();
  let stderr = "";
  const errs = (async () => {
    for await (const chunk of child.stderr) stderr += decoder.decode(chunk);
  })();
  const stdout = child.stdout.getReader();
  let out = "";
  while (!/listening (\d+)/.test(out)) {
    const { value, done } = await stdout.read();
    assert(!done, `child exited: ${stderr}`);
    out += decoder.decode(value);
  }
  const port = Number(/listening (\d+)/.exec(out)![1]);
  const conns: Deno.TcpConn[] = [];
  try {
    // More connections than the child has descriptors: accepting fails for the rest.
    for (let i = 0; i < 120; i++) conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    await new Promise((r) => setTimeout(r, 1500));
    assert(/Accepting a connection failed/.test(stderr), `no accept error logged: ${stderr}`);
    assert(
      (await Promise.race([child.status, new Promise((r) => setTimeout(() => r("up"), 10))])) ===
        "up",
      `the child exited: ${stderr}`,
    );
    for (const c of conns.splice(0)) c.close();
    await new Promise((r) => setTimeout(r, 1500));
    const res = await fetch(`http://127.0.0.1:${port}/`);
    assert(res.status === 200 && (await res.text()) === "ok", "not answering after the flood");
  } finally {
    for (const c of conns) c.close();
    try {
      child.kill("SIGKILL");
    } catch { /* exited: the assertions above say why */ }
    await child.status;
    await stdout.cancel();
    await errs;
  }
});
