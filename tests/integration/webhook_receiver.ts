// A real HTTP receiver for webhook deliveries: Deno.serve on a free port that records every
// request body, and can go down (the listener closed) and come back on the same port.

export interface Received {
  body: string;
  authorization: string | null;
  path: string;
}

/** One record of the protocol's event message, as the tests read it. */
export interface EventRecord {
  eventVersion: string;
  eventSource: string;
  awsRegion: string;
  eventTime: string;
  eventName: string;
  userIdentity: { principalId: string };
  requestParameters: { sourceIPAddress: string };
  responseElements: Record<string, string>;
  s3: {
    s3SchemaVersion: string;
    configurationId: string;
    bucket: { name: string; ownerIdentity: { principalId: string }; arn: string };
    object: { key: string; size?: number; eTag?: string; versionId?: string; sequencer: string };
  };
}

export class WebhookReceiver {
  readonly received: Received[] = [];
  port = 0;
  #server?: Deno.HttpServer;
  #waiters: (() => void)[] = [];

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  start(): this {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: this.port, onListen: () => {} },
      async (req) => {
        this.received.push({
          body: await req.text(),
          authorization: req.headers.get("authorization"),
          path: new URL(req.url).pathname,
        });
        for (const w of this.#waiters.splice(0)) w();
        return new Response(null, { status: 200 });
      },
    );
    this.port = (this.#server.addr as Deno.NetAddr).port;
    return this;
  }

  /** Closes the listener (connections are refused until `start` again). */
  async down(): Promise<void> {
    await this.#server?.shutdown();
    this.#server = undefined;
  }

  async stop(): Promise<void> {
    await this.down();
  }

  /** The event records received so far (test events left out), optionally on one path. */
  records(path?: string): EventRecord[] {
    return this.received
      .filter((r) => path === undefined || r.path === path)
      .map((r) => JSON.parse(r.body))
      .filter((m) => Array.isArray(m.Records))
      .flatMap((m) => m.Records as EventRecord[]);
  }

  /** Waits until `check` holds, re-checking on every delivery; fails after `timeoutMs`. */
  async until(check: () => boolean, timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check()) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`Timed out; ${this.received.length} deliveries received`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 250));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }
}
