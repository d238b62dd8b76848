// Escaping user input for the directory: filter values (RFC 4515), so a user name can never change
// the shape of a filter. No DN is ever built from input: a user's DN is the one the search found.

/** Escapes a value for an LDAP search filter: `*`, `(`, `)`, `\` and NUL as `\xx`. */
export function escapeFilterValue(value: string): string {
  return value.replace(/[*()\\\0]/g, (c) => "\\" + c.charCodeAt(0).toString(16).padStart(2, "0"));
}

/** Fills `{username}` and `{dn}` in a configured filter with escaped values. */
export function fillFilter(template: string, values: { username?: string; dn?: string }): string {
  return template.replace(
    /\{(username|dn)\}/g,
    (_, name: "username" | "dn") => escapeFilterValue(values[name] ?? ""),
  );
}

/** The value of a DN's first RDN, unescaped: `CN=Sales,OU=Groups,...` -> `Sales`. */
export function firstRdnValue(dn: string): string {
  const eq = dn.indexOf("=");
  let out = "";
  for (let i = eq + 1; i < dn.length; i++) {
    const c = dn[i];
    if (c === "\\" && i + 1 < dn.length) {
      const hex = dn.slice(i + 1, i + 3);
      if (/^[0-9a-fA-F]{2}$/.test(hex)) {
        out += String.fromCharCode(parseInt(hex, 16));
        i += 2;
      } else {
        out += dn[++i];
      }
    } else if (c === "," || c === "+") {
      break;
    } else {
      out += c;
    }
  }
  return out.trim();
}
