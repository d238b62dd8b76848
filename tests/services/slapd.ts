// OpenLDAP's slapd for the LDAP sign-in tests (scripts/install/ldap.sh): one process on free ports
// (ldap:// with STARTTLS, and ldaps://) with a generated slapd.conf, a CA and server certificate
// made with openssl, and three directories loaded with slapadd, one per layout the presets cover:
//
//   dc=example,dc=org  OpenLDAP: inetOrgPerson (uid), groupOfNames (member)
//   dc=ds,dc=test      389 Directory Server: the same, with nsAccountLock on disabled accounts
//   dc=corp,dc=test    Active Directory: sAMAccountName, userAccountControl, memberOf
//
// Every directory has the service account cn=reader,<suffix> (password "reader-pw") and the
// manager cn=admin,<suffix> (password "admin-pw"), who may change entries (group removal tests).
import { freePort, waitForPort } from "./process.ts";
import { RealService, serviceDir } from "./service.ts";

export const READER_PASSWORD = "reader-pw";
export const ADMIN_PASSWORD = "admin-pw";

export interface Slapd extends RealService {
  /** ldap://127.0.0.1:<port> (STARTTLS offered). */
  readonly url: string;
  /** ldaps://127.0.0.1:<port>. */
  readonly ldapsUrl: string;
  /** PEM file of the CA that signed the server certificate. */
  readonly caFile: string;
}

/** A directory user in the seed data. */
export interface SeedUser {
  uid: string;
  password: string;
  groups: string[];
  disabled?: boolean;
  mail?: string;
}

/** The same people in every layout. */
export const USERS: SeedUser[] = [
  { uid: "alice", password: "alice-pw", groups: ["engineers"], mail: "alice@example.org" },
  { uid: "bob", password: "bob-pw", groups: ["auditors"] },
  { uid: "carol", password: "carol-pw", groups: ["engineers", "auditors"] },
  { uid: "dave", password: "dave-pw", groups: ["engineers"], disabled: true },
  // A name full of filter syntax: it must match itself only.
  { uid: "e*v(i)l\\", password: "evil-pw", groups: [] },
];

export const SUFFIXES = {
  openldap: "dc=example,dc=org",
  "389ds": "dc=ds,dc=test",
  ad: "dc=corp,dc=test",
} as const;

/** The AD and 389 attributes slapd lacks, under a private OID arc (tests only). */
const TEST_SCHEMA = `
attributetype ( 1.3.6.1.4.1.99999.1.1 NAME 'sAMAccountName'
  EQUALITY caseIgnoreMatch SUBSTR caseIgnoreSubstringsMatch
  SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.99999.1.2 NAME 'userAccountControl'
  EQUALITY integerMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.27 SINGLE-VALUE )
attributetype ( 1.3.6.1.4.1.99999.1.3 NAME 'memberOf'
  EQUALITY distinguishedNameMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.12 )
attributetype ( 1.3.6.1.4.1.99999.1.4 NAME 'nsAccountLock'
  EQUALITY caseIgnoreMatch SYNTAX 1.3.6.1.4.1.1466.115.121.1.15 SINGLE-VALUE )
objectclass ( 1.3.6.1.4.1.99999.2.1 NAME 'testAdUser' AUXILIARY
  MAY ( sAMAccountName $ userAccountControl $ memberOf ) )
objectclass ( 1.3.6.1.4.1.99999.2.2 NAME 'testDsUser' AUXILIARY MAY ( nsAccountLock ) )
`;

function ldifValue(name: string, value: string): string {
  // Values with characters LDIF cannot carry plainly are base64 (name:: ...).
  return /^[\x21-\x39\x3b\x3d-\x7e][\x20-\x7e]*$/.test(value) && !value.endsWith(" ")
    ? `${name}: ${value}`
    : `${name}:: ${btoa(value)}`;
}

function rdnEscape(value: string): string {
  return value.replace(/[\\",+;<>=]/g, (c) => "\\" + c);
}

function userDn(layout: keyof typeof SUFFIXES, uid: string): string {
  const suffix = SUFFIXES[layout];
  return layout === "ad"
    ? `cn=${rdnEscape(uid)},ou=people,${suffix}`
    : `uid=${rdnEscape(uid)},ou=people,${suffix}`;
}

export function groupDn(layout: keyof typeof SUFFIXES, group: string): string {
  return `cn=${group},ou=groups,${SUFFIXES[layout]}`;
}

function seed(layout: keyof typeof SUFFIXES): string {
  const suffix = SUFFIXES[layout];
  const dc = suffix.split(",")[0].slice(3);
  const entries: string[][] = [
    [
      `dn: ${suffix}`,
      "objectClass: dcObject",
      "objectClass: organization",
      `dc: ${dc}`,
      `o: ${dc}`,
    ],
    [`dn: ou=people,${suffix}`, "objectClass: organizationalUnit", "ou: people"],
    [`dn: ou=groups,${suffix}`, "objectClass: organizationalUnit", "ou: groups"],
    [
      `dn: cn=reader,${suffix}`,
      "objectClass: person",
      "cn: reader",
      "sn: reader",
      `userPassword: ${READER_PASSWORD}`,
    ],
  ];
  for (const u of USERS) {
    const lines = [
      ldifValue("dn", userDn(layout, u.uid)),
      "objectClass: inetOrgPerson",
      ldifValue("cn", u.uid),
      ldifValue("sn", u.uid),
      ldifValue("displayName", `${u.uid} (display)`),
      ldifValue("userPassword", u.password),
    ];
    if (u.mail) lines.push(`mail: ${u.mail}`);
    if (layout === "ad") {
      lines.push("objectClass: testAdUser", ldifValue("sAMAccountName", u.uid));
      lines.push(`userAccountControl: ${u.disabled ? 514 : 512}`);
      for (const g of u.groups) lines.push(`memberOf: ${groupDn(layout, g)}`);
    } else {
      lines.push(ldifValue("uid", u.uid));
      if (layout === "389ds") {
        lines.push("objectClass: testDsUser", `nsAccountLock: ${u.disabled ? "true" : "false"}`);
      }
    }
    entries.push(lines);
  }
  for (const group of ["engineers", "auditors"]) {
    const members = USERS.filter((u) => u.groups.includes(group));
    entries.push([
      `dn: ${groupDn(layout, group)}`,
      "objectClass: groupOfNames",
      `cn: ${group}`,
      ...members.map((u) => ldifValue("member", userDn(layout, u.uid))),
    ]);
  }
  return entries.map((e) => e.join("\n")).join("\n\n") + "\n";
}

function slapdConf(dir: string): string {
  const lines = [
    "include /etc/ldap/schema/core.schema",
    "include /etc/ldap/schema/cosine.schema",
    "include /etc/ldap/schema/inetorgperson.schema",
    `include ${dir}/test.schema`,
    `pidfile ${dir}/slapd.pid`,
    "modulepath /usr/lib/ldap",
    "moduleload back_mdb",
    `TLSCACertificateFile ${dir}/ca.pem`,
    `TLSCertificateFile ${dir}/server.pem`,
    `TLSCertificateKeyFile ${dir}/server.key`,
    "loglevel stats",
  ];
  for (const [layout, suffix] of Object.entries(SUFFIXES)) {
    lines.push(
      "",
      "database mdb",
      `suffix "${suffix}"`,
      `rootdn "cn=admin,${suffix}"`,
      `rootpw ${ADMIN_PASSWORD}`,
      `directory ${dir}/db-${layout}`,
      "maxsize 16777216",
      "access to attrs=userPassword by anonymous auth by * none",
      `access to * by dn.exact="cn=reader,${suffix}" read by self read by * none`,
    );
  }
  return lines.join("\n") + "\n";
}

async function run(cmd: string, args: string[], cwd: string): Promise<void> {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" })
    .output();
  if (!out.success) {
    throw new Error(`${cmd} ${args.join(" ")} failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
}

/** A CA and a server certificate for 127.0.0.1 and localhost, made with openssl. */
async function makeCertificates(dir: string): Promise<void> {
  await run("openssl", [
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "2",
    "-subj",
    "/CN=store test CA",
    "-keyout",
    "ca.key",
    "-out",
    "ca.pem",
  ], dir);
  await run("openssl", [
    "req",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-subj",
    "/CN=localhost",
    "-keyout",
    "server.key",
    "-out",
    "server.csr",
  ], dir);
  await Deno.writeTextFile(
    `${dir}/server.ext`,
    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n",
  );
  await run("openssl", [
    "x509",
    "-req",
    "-in",
    "server.csr",
    "-CA",
    "ca.pem",
    "-CAkey",
    "ca.key",
    "-CAcreateserial",
    "-days",
    "2",
    "-extfile",
    "server.ext",
    "-out",
    "server.pem",
  ], dir);
}

export async function createSlapd(): Promise<Slapd> {
  const port = await freePort();
  const ldapsPort = await freePort();
  const dir = await serviceDir("slapd");
  const service = new RealService({
    name: "slapd",
    user: "openldap",
    startTimeoutMs: 15_000,
    stopSignal: "SIGTERM",
    prepare: async (dir) => {
      await makeCertificates(dir);
      await Deno.writeTextFile(`${dir}/test.schema`, TEST_SCHEMA);
      await Deno.writeTextFile(`${dir}/slapd.conf`, slapdConf(dir));
      const layouts = Object.keys(SUFFIXES) as (keyof typeof SUFFIXES)[];
      for (const layout of layouts) await Deno.mkdir(`${dir}/db-${layout}`);
      for (const layout of layouts) {
        await Deno.writeTextFile(`${dir}/seed-${layout}.ldif`, seed(layout));
        await run("slapadd", [
          "-f",
          `${dir}/slapd.conf`,
          "-b",
          SUFFIXES[layout],
          "-l",
          `${dir}/seed-${layout}.ldif`,
        ], dir);
      }
    },
    launch: (dir) => ({
      cmd: "/usr/sbin/slapd",
      // -d: stay in the foreground, logging to stderr; the log file is slapd's own output.
      args: [
        "-f",
        `${dir}/slapd.conf`,
        "-h",
        `ldap://127.0.0.1:${port}/ ldaps://127.0.0.1:${ldapsPort}/`,
        "-d",
        "0",
      ],
      logFile: `${dir}/slapd.log`,
    }),
    ready: async (timeoutMs, exited) => {
      await waitForPort(port, timeoutMs, exited);
      await waitForPort(ldapsPort, timeoutMs, exited);
    },
  }, dir);
  for (
    const [name, value] of Object.entries({
      url: `ldap://127.0.0.1:${port}`,
      ldapsUrl: `ldaps://127.0.0.1:${ldapsPort}`,
      caFile: `${dir}/ca.pem`,
    })
  ) {
    Object.defineProperty(service, name, { value });
  }
  return service as Slapd;
}

export { userDn };
