// The access decision for protocol operations (DESIGN.md §7):
// a disabled user is denied; an explicit deny (bucket_access "none", a Deny statement) wins;
// then ownership, bucket_access, the bucket policy or the ACL may allow; otherwise deny.
import { S3Error } from "../http/errors.ts";
import type { BucketRecord, MetaStore } from "../meta/store.ts";
import { type Acl, aclFromJson, aclGrants, type Permission, privateAcl } from "./acl.ts";
import { ACCOUNT_OPERATIONS, OPERATION_RULES, type OperationRule, ruleActions } from "./actions.ts";
import {
  type BucketPolicy,
  evaluatePolicy,
  isPublicPolicy,
  mayAllowAnonymous,
  parseBucketPolicy,
  readsExistingTags,
} from "./policy.ts";
import { principalIds } from "./policy_principals.ts";
import type { ConditionContext } from "./policy_conditions.ts";
import {
  type BucketGuards,
  effectiveAcl,
  type ObjectOwnership,
  readStoredBlock,
} from "./public_access.ts";
import type { Principal } from "./principal.ts";

/** Facts about the request that policy conditions look at (see ConditionContext). */
export type RequestFacts = Omit<ConditionContext, "existingTags">;

/** What a request acts on; `versionId` when it names a version (its version action applies). */
export interface AccessTarget {
  bucket?: BucketRecord;
  bucketName?: string;
  key?: string;
  versionId?: string;
  facts: RequestFacts;
}

export function accessDenied(): S3Error {
  return new S3Error("AccessDenied", "Access Denied");
}

/**
 * The outcome of the request-level check: "object-acl" defers to the object's ACL once the
 * handler has loaded it; "per-key" leaves every key to the handler (DeleteObjects).
 */
export type Verdict = "allow" | "object-acl" | "per-key";

export class AccessControl {
  readonly #parsed = new Map<string, { text: string; policy: BucketPolicy }>();
  /**
   * Forgets so far, of any bucket: a parse that began before one (its pins perhaps read before a
   * PutBucketPolicy of the same text pinned them anew) is not cached. Forgets are rare; one costs
   * the parses in flight their caching, nothing else.
   */
  #forgets = 0;

  constructor(readonly meta: MetaStore) {}

  /** The stored policy of a bucket, parsed (undefined when none). */
  async policy(bucket: string): Promise<BucketPolicy | undefined> {
    const text = await this.meta.getBucketConfig(bucket, "policy");
    if (text === undefined) return undefined;
    // Every request of a non-owner consults the policy: parse each stored text once.
    const cached = this.#parsed.get(bucket);
    if (cached?.text === text) return cached.policy;
    const forgets = this.#forgets;
    const policy = parseBucketPolicy(text, bucket, { stored: true });
    policy.userIds = await principalIds(this.meta, bucket, text, policy);
    if (this.#forgets !== forgets) return policy;
    if (this.#parsed.size >= 1000) this.#parsed.clear();
    this.#parsed.set(bucket, { text, policy });
    return policy;
  }

  /** Drops the parsed policy of a bucket (its principals were pinned anew). */
  forget(bucket: string): void {
    this.#parsed.delete(bucket);
    this.#forgets++;
  }

  /** The bucket's ACL, or the owner's default private ACL. */
  async bucketAcl(bucket: BucketRecord): Promise<Acl> {
    const text = await this.meta.getBucketConfig(bucket.name, "acl");
    return text === undefined
      ? privateAcl({ id: bucket.owner, displayName: bucket.owner })
      : aclFromJson(text);
  }

  /**
   * Decides `operation` for `principal` on `bucket` (undefined when it does not exist) and
   * `key`. Throws AccessDenied, or returns "allow", or "object-acl" when only the object's
   * own ACL could still grant the operation (the handler checks it after loading the object).
   */
  async decide(
    principal: Principal,
    operation: string,
    target: AccessTarget,
  ): Promise<Verdict> {
    if (!principal.enabled) throw accessDenied();
    const rule = OPERATION_RULES[operation];
    if (principal.session?.policy && !rule) {
      // Account operations under a session policy: listing shows the principal's own buckets;
      // creating one needs the policy to allow CreateBucket.
      if (operation === "CreateBucket") {
        this.#sessionAllows(principal, "CreateBucket", target.bucketName ?? "", undefined, target);
      } else if (operation !== "ListBuckets") {
        throw accessDenied();
      }
    }
    if (principal.kind === "admin") return "allow";
    if (ACCOUNT_OPERATIONS.has(operation)) {
      if (principal.kind === "anonymous") throw accessDenied();
      return "allow";
    }
    if (rule?.byHandler) return "per-key";
    if (rule?.perKey) {
      // An anonymous caller's document is not even read unless some key could be allowed (a
      // missing bucket is left to the handler: NoSuchBucket).
      if (
        principal.kind === "anonymous" && target.bucket &&
        !(await this.anonymousMayAct(rule, target.bucket))
      ) {
        throw accessDenied();
      }
      return "per-key";
    }
    if (!rule) {
      // Operations without a rule (not built yet) are for owners and the administrator.
      if (target.bucket && target.bucket.owner === principal.id) return "allow";
      if (!target.bucket) return "allow";
      throw accessDenied();
    }
    return await this.decideRule(principal, rule, target);
  }

  /** Whether anonymous callers could be allowed `rule` on some key of `bucket` (ACL or policy). */
  async anonymousMayAct(rule: OperationRule, bucket: BucketRecord | undefined): Promise<boolean> {
    if (!bucket) return false;
    if (rule.acl?.on === "bucket") {
      const acl = effectiveAcl(await this.bucketAcl(bucket), await this.guards(bucket.name));
      if (aclGrants(acl, { id: "", anonymous: true }, rule.acl.permission)) return true;
    }
    const policy = await this.policy(bucket.name);
    return policy !== undefined && mayAllowAnonymous(policy, ruleActions(rule));
  }

  /** The same decision for an explicit rule (CopyObject's source read, DeleteObjects' keys). */
  async decideRule(
    principal: Principal,
    rule: OperationRule,
    target: AccessTarget,
  ): Promise<Verdict> {
    if (!principal.enabled) throw accessDenied();
    if (principal.session?.policy) {
      const action = target.versionId !== undefined && rule.versionAction
        ? rule.versionAction
        : rule.action;
      const name = target.bucket?.name ?? target.bucketName ?? "";
      this.#sessionAllows(principal, action, name, rule.object ? target.key : undefined, target);
    }
    if (principal.kind === "admin") return "allow";
    const bucket = target.bucket;
    // A missing bucket: the handler answers NoSuchBucket (to anonymous callers too).
    if (!bucket) return "allow";
    const entry = principal.bucketAccess.find((e) => e.bucket === bucket.name);
    if (entry?.permission === "none") throw accessDenied();
    const policy = await this.policy(bucket.name);
    const key = rule.object ? target.key : undefined;
    const verdict = policy
      ? evaluatePolicy(policy, {
        action: target.versionId !== undefined && rule.versionAction
          ? rule.versionAction
          : rule.action,
        bucket: bucket.name,
        key,
        userName: principal.kind === "user" ? principal.displayName : undefined,
        userId: principal.kind === "user" ? principal.id : undefined,
        ...target.facts,
        existingTags: key !== undefined && readsExistingTags(policy)
          ? await this.#existingTags(bucket.name, key, target.facts.versionId)
          : undefined,
      })
      : "NoMatch";
    if (verdict === "Deny") throw accessDenied();
    if (verdict === "Allow" && !(await this.#restricted(bucket, policy!))) return "allow";
    if (bucket.owner === principal.id) return "allow";
    if (entry && rule.access && grantsClass(entry.permission, rule.access)) return "allow";
    if (rule.acl?.on === "bucket") {
      const acl = effectiveAcl(await this.bucketAcl(bucket), await this.guards(bucket.name));
      if (aclGrants(acl, who(principal), rule.acl.permission)) return "allow";
    }
    if (rule.acl?.on === "object") return "object-acl";
    throw accessDenied();
  }

  /**
   * For an "object-acl" verdict: the object's ACL must grant `permission`. The object's owner
   * may always read and change the ACL itself, as the protocol defines.
   */
  async checkObjectAcl(
    principal: Principal,
    object: { bucket: string; acl?: string; owner: string },
    permission: Permission,
  ): Promise<void> {
    const guards = await this.guards(object.bucket);
    // With ACLs disabled the bucket owner owns every object (and was allowed before this).
    const aclsOn = guards.ownership !== "BucketOwnerEnforced";
    const owner = object.owner;
    if (
      aclsOn && principal.id === owner && principal.kind !== "anonymous" &&
      permission.endsWith("_ACP")
    ) {
      return;
    }
    const acl = object.acl === undefined
      ? privateAcl({ id: owner, displayName: owner })
      : aclFromJson(object.acl);
    if (!aclGrants(effectiveAcl(acl, guards), who(principal), permission)) throw accessDenied();
  }

  /** A session policy must allow the action too: it narrows, never widens (AccessDenied). */
  #sessionAllows(
    principal: Principal,
    action: string,
    bucket: string,
    key: string | undefined,
    target: AccessTarget,
  ): void {
    const verdict = evaluatePolicy(principal.session!.policy!, {
      action,
      bucket,
      key,
      userName: principal.displayName,
      userId: principal.id,
      ...target.facts,
    });
    if (verdict !== "Allow") throw accessDenied();
  }

  /** The bucket's public access block and object ownership setting (see public_access.ts). */
  async guards(bucket: string): Promise<BucketGuards> {
    const [block, ownership] = await Promise.all([
      this.meta.getBucketConfig(bucket, "public-access-block"),
      this.meta.getBucketConfig(bucket, "ownership"),
    ]);
    return {
      block: block === undefined ? undefined : readStoredBlock(block),
      ownership: ownership as ObjectOwnership | undefined,
    };
  }

  /** The tags of the addressed version, for ExistingObjectTag conditions (none when missing). */
  async #existingTags(bucket: string, key: string, versionId?: string) {
    const version = await this.meta.getObjectVersion(bucket, key, versionId);
    return version && !version.deleteMarker ? version.tags ?? {} : undefined;
  }

  /** RestrictPublicBuckets: a public policy grants nothing outside the owner's account. */
  async #restricted(bucket: BucketRecord, policy: BucketPolicy): Promise<boolean> {
    if (!isPublicPolicy(policy)) return false;
    return (await this.guards(bucket.name)).block?.restrictPublicBuckets === true;
  }
}

function grantsClass(permission: string, needed: "read" | "write"): boolean {
  return permission === "readwrite" || permission === needed;
}

function who(principal: Principal): { id: string; anonymous: boolean } {
  return { id: principal.id, anonymous: principal.kind === "anonymous" };
}
