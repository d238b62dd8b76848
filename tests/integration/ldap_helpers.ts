// Shared by the LDAP tests: token service requests, clients with temporary credentials, and
// changes to the test directory.
import { S3Client } from "@aws-sdk/client-s3";
import { Attribute, Change, Client } from "ldapts";
import {
  ADMIN_PASSWORD as DIRECTORY_ADMIN_PASSWORD,
  groupDn,
  SUFFIXES,
} from "../services/slapd.ts";
import { assertEquals } from "./assert.ts";
import { REGION, type TestServer } from "./server.ts";
import { xmlValue } from "./signer.ts";

export interface TempCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken: string;
  expiration: string;
}

/** An unsigned token service request (form body); answers status and XML text. */
export async function sts(
  server: TestServer,
  params: Record<string, string>,
): Promise<{ status: number; text: string; headers: Headers }> {
  const res = await fetch(`${server.url}/`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ Version: "2011-06-15", ...params }).toString(),
  });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

export function credentialsOf(xml: string): TempCredentials {
  return {
    accessKeyId: xmlValue(xml, "AccessKeyId")!,
    secretAccessKey: xmlValue(xml, "SecretAccessKey")!,
    sessionToken: xmlValue(xml, "SessionToken")!,
    expiration: xmlValue(xml, "Expiration")!,
  };
}

/** AssumeRoleWithLDAPIdentity that must succeed. */
export async function ldapSignIn(
  server: TestServer,
  username: string,
  password: string,
  extra: Record<string, string> = {},
): Promise<TempCredentials> {
  const res = await sts(server, {
    Action: "AssumeRoleWithLDAPIdentity",
    LDAPUsername: username,
    LDAPPassword: password,
    ...extra,
  });
  assertEquals(res.status, 200, `sign-in of ${username}: ${res.text}`);
  return credentialsOf(res.text);
}

/** The error code of a token service error answer. */
export function errorCode(xml: string): string | undefined {
  return xmlValue(xml, "Code");
}

export function sessionClient(server: TestServer, creds: TempCredentials): S3Client {
  return new S3Client({
    endpoint: server.url,
    region: REGION,
    forcePathStyle: true,
    credentials: {
      accessKeyId: creds.accessKeyId,
      secretAccessKey: creds.secretAccessKey,
      sessionToken: creds.sessionToken,
    },
    maxAttempts: 1,
  });
}

/** Adds or removes a user (by DN) in a group of the test directory, as its manager. */
export async function changeMembership(
  url: string,
  layout: keyof typeof SUFFIXES,
  group: string,
  memberDn: string,
  operation: "add" | "delete",
): Promise<void> {
  const client = new Client({ url });
  try {
    await client.bind(`cn=admin,${SUFFIXES[layout]}`, DIRECTORY_ADMIN_PASSWORD);
    await client.modify(
      groupDn(layout, group),
      new Change({
        operation,
        modification: new Attribute({ type: "member", values: [memberDn] }),
      }),
    );
  } finally {
    await client.unbind().catch(() => {});
  }
}
