/**
 * A value as a refusal or a log line may quote it, without the credentials a URL can carry:
 * `http://user:secret@host/` is told as `http://<credentials hidden>@host/`. Everything from
 * the scheme's `//` up to the last `@` is hidden: a password may hold `/`, `:` or `@`
 * unencoded, and hiding a path's `@` too is safer than showing a password.
 *
 * `schemeless`: the value is meant as a URL (--health-http), so `user:secret@host:8080`, typed
 * without its scheme, is hidden too (`<credentials hidden>@host:8080`). Not for any value: an
 * image `app:1@sha256:...` has that shape and no password. A value with no `:` before its `@`
 * (`app@host`) holds no password and is kept either way.
 */
export function hideCredentials(text: string, o: { schemeless?: boolean } = {}): string {
  const at = text.lastIndexOf('@');
  if (at < 0) return text;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(text)?.[0];
  if (scheme !== undefined && scheme.length <= at) return `${scheme}<credentials hidden>${text.slice(at)}`;
  if (scheme !== undefined || !o.schemeless || !text.slice(0, at).includes(':')) return text;
  return `<credentials hidden>${text.slice(at)}`;
}
