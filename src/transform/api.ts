// The transformation API (Bearer tokens of /api/v1/tokens):
//   PUT|GET|DELETE /api/v1/transforms/{bucket}   a bucket's rules: its owner or the administrator
//   POST /api/v1/jobs  {bucket, key, version_id?, actions, output} -> 202 {id, state}
//   GET  /api/v1/jobs/{id}                       one job
//   GET  /api/v1/jobs?bucket=&state=&after=&limit=  jobs in order, paged by `next_after`
// Reading the source and writing the output are decided by the same access rules as the protocol
// (GetObject and PutObject for the caller); listing jobs needs ListObjectsV2 on the bucket.
import type { AccessTarget } from "../auth/access.ts";
import type { Principal } from "../auth/principal.ts";
import { ApiError, jsonResponse, readJsonObject } from "../api/json.ts";
import { tokenPrincipal } from "../api/service.ts";
import { currentAudit } from "../audit/scope.ts";
import { S3Error } from "../http/errors.ts";
import { isSecureRequest } from "../http/secure_transport.ts";
import type { BucketRecord, JobRecord, JobState } from "../meta/store.ts";
import type { AppDeps } from "../protocol.ts";
import { newJob } from "./rules.ts";
import { parseActions, parseJobOutput, parseRules, SpecError } from "./spec.ts";

const STATES: JobState[] = ["queued", "running", "done", "failed"];
const MAX_RULES_BODY = 64 * 1024;
const MAX_JOB_BODY = 8 * 1024;

function invalid(message: string): ApiError {
  return new ApiError(400, "invalid_field", message);
}

/** Whether `principal` may do `operation`: true, or false when the protocol would refuse it. */
async function allowed(
  deps: AppDeps,
  req: Request,
  principal: Principal,
  operation: string,
  target: Omit<AccessTarget, "facts">,
): Promise<boolean> {
  const facts = {
    sourceIp: currentAudit()?.source ?? "",
    secureTransport: isSecureRequest(req.headers, deps.config.trustProxy),
    now: new Date(),
    versionId: target.versionId,
  };
  try {
    // An object ACL could still grant it, but the API loads no object ACL: refused.
    return (await deps.access.decide(principal, operation, { ...target, facts })) !== "object-acl";
  } catch (err) {
    if (err instanceof S3Error && err.code === "AccessDenied") return false;
    throw err;
  }
}

async function bucketNamed(deps: AppDeps, name: unknown): Promise<BucketRecord> {
  if (typeof name !== "string" || name === "") throw invalid("bucket is a required string.");
  const bucket = await deps.layer.meta.getBucket(name);
  if (!bucket) throw new ApiError(404, "no_such_bucket", `The bucket ${name} does not exist.`);
  return bucket;
}

function specError<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    if (err instanceof SpecError) throw invalid(err.message);
    throw err;
  }
}

async function rulesRoute(req: Request, deps: AppDeps, principal: Principal, name: string) {
  const scope = currentAudit();
  if (scope) {
    scope.bucket = name;
    scope.operation = { PUT: "PutTransformRules", DELETE: "DeleteTransformRules" }[req.method] ??
      "GetTransformRules";
  }
  const bucket = await bucketNamed(deps, name);
  if (principal.kind !== "admin" && bucket.owner !== principal.id) {
    throw new ApiError(403, "access_denied", "Only the bucket's owner sets its transformations.");
  }
  const meta = deps.layer.meta;
  if (req.method === "GET") {
    const text = await meta.getBucketConfig(name, "transform");
    if (text === undefined) {
      throw new ApiError(404, "no_transform_rules", "The bucket has no transformation rules.");
    }
    return jsonResponse(200, JSON.parse(text));
  }
  if (req.method === "DELETE") {
    await meta.deleteBucketConfig(name, "transform");
    return jsonResponse(204, null);
  }
  if (req.method !== "PUT") {
    throw new ApiError(405, "method_not_allowed", "Use PUT, GET or DELETE.");
  }
  const body = await readJsonObject(req, MAX_RULES_BODY);
  const rules = specError(() => parseRules(body));
  for (const rule of rules) {
    const out = await bucketNamed(deps, rule.output.bucket ?? name);
    if (
      !(await allowed(deps, req, principal, "PutObject", { bucket: out, key: rule.output.prefix }))
    ) {
      throw new ApiError(
        403,
        "access_denied",
        `Rule ${rule.id}: you may not write to ${out.name}/${rule.output.prefix}.`,
      );
    }
  }
  const stored = { rules };
  await meta.putBucketConfig(name, "transform", JSON.stringify(stored));
  return jsonResponse(200, stored);
}

function jobView(j: JobRecord): Record<string, unknown> {
  return {
    id: j.id,
    bucket: j.bucket,
    key: j.key,
    version_id: j.versionId ?? null,
    rule: j.rule ?? null,
    state: j.state,
    attempts: j.attempts,
    error: j.error ?? null,
    output: j.outputKey === undefined
      ? null
      : { bucket: j.outputBucket, key: j.outputKey, version_id: j.outputVersionId },
    created_at: new Date(j.createdAt).toISOString(),
    updated_at: new Date(j.updatedAt).toISOString(),
  };
}

async function createJob(req: Request, deps: AppDeps, principal: Principal) {
  const body = await readJsonObject(req, MAX_JOB_BODY);
  const extra = Object.keys(body).find(
    (k) => !["bucket", "key", "version_id", "actions", "output"].includes(k),
  );
  if (extra) throw invalid(`Unknown field ${extra}.`);
  const source = await bucketNamed(deps, body.bucket);
  const { key, version_id: versionId } = body;
  if (typeof key !== "string" || key === "") throw invalid("key is a required string.");
  if (versionId !== undefined && (typeof versionId !== "string" || versionId === "")) {
    throw invalid("version_id must be a string.");
  }
  const actions = specError(() => parseActions(body.actions));
  const output = specError(() =>
    parseJobOutput(body.output, { bucket: source.name, key }, actions)
  );
  const scope = currentAudit();
  if (scope) {
    scope.bucket = source.name;
    scope.key = key;
  }
  if (!(await allowed(deps, req, principal, "GetObject", { bucket: source, key, versionId }))) {
    throw new ApiError(403, "access_denied", `You may not read ${source.name}/${key}.`);
  }
  const target = await bucketNamed(deps, output.bucket);
  if (!(await allowed(deps, req, principal, "PutObject", { bucket: target, key: output.key }))) {
    throw new ApiError(403, "access_denied", `You may not write ${target.name}/${output.key}.`);
  }
  const version = await deps.layer.meta.getObjectVersion(source.name, key, versionId);
  if (!version || version.deleteMarker) {
    throw new ApiError(404, "no_such_key", "The source object does not exist.");
  }
  const job = newJob(
    { bucket: source.name, key, versionId: version.versionId },
    { actions, output },
    principal.id,
  );
  await deps.layer.meta.createJob(job);
  if (scope) scope.detail = { job: job.id };
  deps.transforms.notify();
  return jsonResponse(202, { id: job.id, state: "queued" }, {
    location: `/api/v1/jobs/${job.id}`,
  });
}

/** Whether `principal` may see the jobs of bucket `name`: it may list the bucket. */
async function mayList(
  deps: AppDeps,
  req: Request,
  principal: Principal,
  name: string,
): Promise<boolean> {
  const bucket = await deps.layer.meta.getBucket(name);
  return !!bucket && await allowed(deps, req, principal, "ListObjectsV2", { bucket });
}

async function getJob(req: Request, deps: AppDeps, principal: Principal, id: string) {
  const job = await deps.layer.meta.getJob(id);
  // Jobs the caller may not see are answered as missing: ids are not probed.
  if (
    !job || (job.requester !== principal.id && !(await mayList(deps, req, principal, job.bucket)))
  ) {
    throw new ApiError(404, "no_such_job", "There is no job with that id.");
  }
  return jsonResponse(200, jobView(job));
}

function intParam(params: URLSearchParams, name: string, max: number, fallback: number): number {
  const raw = params.get(name);
  if (raw === null) return fallback;
  if (!/^\d{1,15}$/.test(raw) || +raw > max) {
    throw invalid(`${name} must be an integer from 0 to ${max}.`);
  }
  return Number(raw);
}

async function listJobs(req: Request, deps: AppDeps, principal: Principal) {
  const params = new URL(req.url).searchParams;
  const bucket = params.get("bucket") ?? undefined;
  const state = params.get("state") ?? undefined;
  if (state !== undefined && !STATES.includes(state as JobState)) {
    throw invalid(`state must be one of ${STATES.join(", ")}.`);
  }
  const limit = Math.max(1, intParam(params, "limit", 1000, 100));
  const after = intParam(params, "after", Number.MAX_SAFE_INTEGER, 0);
  if (bucket === undefined && principal.kind !== "admin") {
    throw invalid("bucket is required.");
  }
  if (bucket !== undefined) {
    await bucketNamed(deps, bucket);
    if (!(await mayList(deps, req, principal, bucket))) {
      throw new ApiError(403, "access_denied", `You may not list the jobs of ${bucket}.`);
    }
  }
  const jobs = await deps.layer.meta.listJobs({
    bucket,
    state: state as JobState | undefined,
    after,
    limit: limit + 1,
  });
  const page = jobs.slice(0, limit);
  return jsonResponse(200, {
    jobs: page.map(jobView),
    next_after: jobs.length > limit ? page[page.length - 1].seq : null,
  });
}

/** /api/v1/transforms/{bucket} and /api/v1/jobs[/{id}]; undefined for other paths. */
export async function transformRoute(
  req: Request,
  deps: AppDeps,
  path: string,
): Promise<Response | undefined> {
  const rules = /^\/api\/v1\/transforms\/([^/]+)$/.exec(path);
  const jobs = /^\/api\/v1\/jobs(?:\/([^/]+))?$/.exec(path);
  if (!rules && !jobs) return undefined;
  const { principal } = await tokenPrincipal(req, deps);
  let name: string;
  try {
    name = decodeURIComponent((rules ?? jobs)![1] ?? "");
  } catch {
    throw new ApiError(400, "invalid_path", "The path is not properly encoded.");
  }
  if (rules) return await rulesRoute(req, deps, principal, name);
  const scope = currentAudit();
  if (name !== "") {
    if (scope) scope.operation = "GetJob";
    if (req.method !== "GET") throw new ApiError(405, "method_not_allowed", "Use GET.");
    return await getJob(req, deps, principal, name);
  }
  if (req.method === "POST") {
    if (scope) scope.operation = "CreateJob";
    return await createJob(req, deps, principal);
  }
  if (req.method === "GET") {
    if (scope) scope.operation = "ListJobs";
    return await listJobs(req, deps, principal);
  }
  throw new ApiError(405, "method_not_allowed", "Use POST to ask for a job, GET to list them.");
}
