//! What serving an attachment's bytes (`GET /v1/attachments/:id/content`,
//! docs/api.md "Files and attachments") decides from the request and the stored
//! file, as pure functions: the byte range asked for (RFC 9110 section
//! 14), the entity tag and `If-None-Match` (section 13.1.2), whether the
//! content may be shown inline, the `Content-Disposition` header (RFC 6266,
//! RFC 8187), and the signed links that open it without a token.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use uuid::Uuid;

/// What a `Range` header selects of a representation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranged {
    /// All of it (200): no `Range`, or one that is ignored (malformed, not
    /// in bytes, several ranges, an empty file).
    Whole,
    /// The bytes `start..end` (206 with `Content-Range: bytes
    /// <start>-<end - 1>/<size>`); never empty, `end` at most the size.
    Part {
        /// The first byte.
        start: u64,
        /// One past the last byte.
        end: u64,
    },
    /// 416 with `Content-Range: bytes */<size>`: the range starts at or
    /// past the end, or is the empty suffix `-0`.
    Unsatisfiable,
}

/// At most this many digits in a position of a `Range` header: any u64
/// has at most 20, and 19 digits always fit; a longer one is malformed
/// (and the header ignored) rather than an overflow.
const MAX_DIGITS: usize = 19;

/// What the `Range` header (`header`, if any) selects of a representation
/// of `size` bytes (RFC 9110 section 14.2).
///
/// Only the `bytes` unit and a single range are honoured: `a-b` (`b`
/// clamped to the last byte), `a-` (to the end), `-n` (the last `n`
/// bytes, all of them when `n >= size`). Whatever else is ignored, as the
/// RFC allows (a server may ignore `Range`), so it answers [`Ranged::Whole`]:
/// another unit, a malformed header, `b < a`, a position of more than 19
/// digits, several ranges (serving `multipart/byteranges` is not worth it;
/// also what keeps many small overlapping ranges from costing anything).
/// A range starting at or past the end, and `-0`, are
/// [`Ranged::Unsatisfiable`]. An empty file answers [`Ranged::Whole`]
/// whatever the range (no byte to select; its 200 is zero bytes long).
/// Whitespace is tolerated around the `=` and the commas.
pub fn range(header: Option<&str>, size: u64) -> Ranged {
    let Some(header) = header else {
        return Ranged::Whole;
    };
    if size == 0 {
        return Ranged::Whole;
    }
    let Some((unit, set)) = header.split_once('=') else {
        return Ranged::Whole;
    };
    if !unit.trim().eq_ignore_ascii_case("bytes") {
        return Ranged::Whole;
    }
    // A list may have empty elements (RFC 9110 section 5.6.1): `0-1, `
    // is one range.
    let mut specs = set.split(',').map(str::trim).filter(|s| !s.is_empty());
    let (Some(spec), None) = (specs.next(), specs.next()) else {
        return Ranged::Whole;
    };
    let Some((first, last)) = spec.split_once('-') else {
        return Ranged::Whole;
    };
    match (first, last) {
        ("", suffix) => match position(suffix) {
            None => Ranged::Whole,
            Some(0) => Ranged::Unsatisfiable,
            Some(n) => Ranged::Part {
                start: size.saturating_sub(n),
                end: size,
            },
        },
        (first, "") => match position(first) {
            None => Ranged::Whole,
            Some(start) if start >= size => Ranged::Unsatisfiable,
            Some(start) => Ranged::Part { start, end: size },
        },
        (first, last) => match (position(first), position(last)) {
            (Some(start), Some(last)) if start <= last => {
                if start >= size {
                    Ranged::Unsatisfiable
                } else {
                    Ranged::Part {
                        start,
                        end: last.min(size - 1) + 1,
                    }
                }
            }
            _ => Ranged::Whole,
        },
    }
}

/// A position of a range: 1 to [`MAX_DIGITS`] ASCII digits (no sign, no
/// whitespace), else `None`.
fn position(digits: &str) -> Option<u64> {
    if digits.is_empty() || digits.len() > MAX_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    digits.parse().ok()
}

/// The strong entity tag of content whose SHA-256 is `sha256_hex`: the
/// hex between double quotes (the `ETag` header's value). Its bytes never
/// change for a given attachment, so the hash of them is the tag.
pub fn etag(sha256_hex: &str) -> String {
    format!("\"{sha256_hex}\"")
}

/// Whether an `If-None-Match` header (`if_none_match`, if any) matches
/// `etag` (as [`etag`] makes it), i.e. whether the answer is 304 Not
/// Modified (RFC 9110 section 13.1.2).
///
/// `*` matches (the caller asks only for content that exists); otherwise
/// the header is a comma-separated list of entity tags, compared weakly as
/// the RFC says for this header: `W/"x"` matches `"x"`, and the other way
/// round. A header that does not parse matches nothing from where it stops
/// being parseable (the answer is then the content: always correct).
pub fn none_match(if_none_match: Option<&str>, etag: &str) -> bool {
    let Some(header) = if_none_match else {
        return false;
    };
    if header.trim() == "*" {
        return true;
    }
    let Some(ours) = opaque(etag).map(|(tag, _)| tag) else {
        return false;
    };
    let mut rest = header;
    loop {
        rest = rest.trim_start_matches([' ', '\t', ',']);
        if rest.is_empty() {
            return false;
        }
        let Some((tag, after)) = opaque(rest) else {
            return false;
        };
        if tag == ours {
            return true;
        }
        rest = after;
    }
}

/// The opaque tag (what is between the quotes) of the entity tag that
/// `text` starts with (`"x"` or `W/"x"`), and the text after it.
fn opaque(text: &str) -> Option<(&str, &str)> {
    let text = text.strip_prefix("W/").unwrap_or(text);
    let quoted = text.strip_prefix('"')?;
    let close = quoted.find('"')?;
    Some((&quoted[..close], &quoted[close + 1..]))
}

/// Whether content of type `file_type` may be shown inline
/// (`Content-Disposition: inline`) rather than downloaded: only the
/// raster images a browser shows as such (PNG, JPEG, GIF, WebP), audio and
/// video, which a browser plays and never runs. Anything else, and SVG and
/// HTML above all, is an attachment (docs/api.md "Files and attachments"). The type and
/// subtype compare case-insensitively; parameters (after `;`) are ignored.
pub fn inline(file_type: &str) -> bool {
    let essence = file_type.split(';').next().unwrap_or(file_type).trim();
    let Some((top, sub)) = essence.split_once('/') else {
        return false;
    };
    let token = !sub.is_empty()
        && sub
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b));
    if !token {
        return false;
    }
    if top.eq_ignore_ascii_case("audio") || top.eq_ignore_ascii_case("video") {
        return true;
    }
    top.eq_ignore_ascii_case("image")
        && ["png", "jpeg", "gif", "webp"]
            .iter()
            .any(|known| sub.eq_ignore_ascii_case(known))
}

/// The `Content-Disposition` header's value for a file named `filename`:
/// `inline` or `attachment`, then `filename="<ASCII fallback>"` for old
/// clients (every character outside printable ASCII, and `"`, `\` and `%`,
/// replaced by `_`: `%` because some browsers percent-decode that
/// parameter) and `filename*=UTF-8''<percent-encoded UTF-8>` (RFC 8187,
/// which clients that know it prefer). Only printable ASCII comes out, so
/// the value is always a valid header value. An empty name gives the
/// disposition alone (the client then names the file itself).
pub fn disposition(filename: &str, inline: bool) -> String {
    let kind = if inline { "inline" } else { "attachment" };
    if filename.is_empty() {
        return kind.to_owned();
    }
    let fallback: String = filename
        .chars()
        .map(|c| match c {
            '"' | '\\' | '%' => '_',
            ' '..='~' => c,
            _ => '_',
        })
        .collect();
    let mut encoded = String::with_capacity(filename.len() * 3);
    for &b in filename.as_bytes() {
        // RFC 8187 attr-char.
        if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
            encoded.push(char::from(b));
        } else {
            encoded.push('%');
            encoded.push(char::from(HEX_UPPER[usize::from(b >> 4)]));
            encoded.push(char::from(HEX_UPPER[usize::from(b & 0xf)]));
        }
    }
    format!("{kind}; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";
const HEX_LOWER: &[u8; 16] = b"0123456789abcdef";

/// How long a signed content link is valid at most, in seconds (docs/api.md
/// "Files and attachments": one hour).
pub const LINK_VALID_SECS: i64 = 3600;

/// Links expire on multiples of this many seconds (see [`expiry`]).
const LINK_GRANULARITY_SECS: i64 = 300;

/// The shortest key a [`LinkSigner`] takes, in bytes (256 bits, the
/// strength of HMAC-SHA256).
pub const LINK_KEY_MIN_BYTES: usize = 32;

/// The `expires` of a link minted at `now` (unix seconds): `now +
/// LINK_VALID_SECS` rounded down to a multiple of 5 minutes.
///
/// All the links to one attachment minted within the same 5 minutes are
/// then the same URL, so that the clients' and proxies' caches keep one
/// copy of the content, and a page listing the same messages twice
/// renders the same links. Such a link is valid for more than 55 and at
/// most 60 minutes, never longer than the hour the docs promise.
pub fn expiry(now: i64) -> i64 {
    now.saturating_add(LINK_VALID_SECS)
        .div_euclid(LINK_GRANULARITY_SECS)
        .saturating_mul(LINK_GRANULARITY_SECS)
}

/// Signs and verifies the links that open an attachment's content without
/// a token: `...?expires=<unix seconds>&signature=<hex>`, the signature
/// being HMAC-SHA256 over `"<hyphenated id>.<expires>"` with a key of the
/// server's.
#[derive(Clone)]
pub struct LinkSigner {
    /// HMAC keyed once (its inner and outer states): cloned for each
    /// signature instead of hashing the key again. Holds what the key
    /// gives, so it is never printed.
    mac: Hmac<Sha256>,
}

impl std::fmt::Debug for LinkSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkSigner").finish_non_exhaustive()
    }
}

impl LinkSigner {
    /// A signer with `key` ([`LINK_KEY_MIN_BYTES`] bytes or more, random:
    /// whoever knows it opens any attachment).
    ///
    /// # Panics
    ///
    /// When `key` is shorter than [`LINK_KEY_MIN_BYTES`]: the key is the
    /// server's own (from its configuration, checked when that is read, or
    /// random), so a short one is a bug.
    pub fn new(key: Vec<u8>) -> Self {
        assert!(
            key.len() >= LINK_KEY_MIN_BYTES,
            "a link signing key has at least {LINK_KEY_MIN_BYTES} bytes"
        );
        let Ok(mac) = Hmac::<Sha256>::new_from_slice(&key) else {
            // HMAC takes keys of any length.
            unreachable!("HMAC refused a key");
        };
        Self { mac }
    }

    /// The HMAC over the signed text of a link to `id` expiring at
    /// `expires`, not finalized.
    fn mac(&self, id: Uuid, expires: i64) -> Hmac<Sha256> {
        let mut mac = self.mac.clone();
        mac.update(id.hyphenated().to_string().as_bytes());
        mac.update(b".");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// The `signature` of a link to attachment `id` expiring at `expires`
    /// (unix seconds, see [`expiry`]): 64 lower-case hex digits.
    pub fn sign(&self, id: Uuid, expires: i64) -> String {
        let tag = self.mac(id, expires).finalize().into_bytes();
        let mut hex = String::with_capacity(tag.len() * 2);
        for b in tag {
            hex.push(char::from(HEX_LOWER[usize::from(b >> 4)]));
            hex.push(char::from(HEX_LOWER[usize::from(b & 0xf)]));
        }
        hex
    }

    /// Whether `signature` is that of a link to `id` expiring at `expires`
    /// and the link has not expired at `now` (valid up to and including
    /// the second `expires`). The signature is 64 hex digits of either case
    /// (what [`LinkSigner::sign`] writes, or a client that upper-cased the
    /// URL); it is compared in constant time.
    pub fn verify(&self, id: Uuid, expires: i64, signature: &str, now: i64) -> bool {
        if expires < now {
            return false;
        }
        let Some(tag) = decode_hex_32(signature) else {
            return false;
        };
        self.mac(id, expires).verify_slice(&tag).is_ok()
    }
}

/// 64 hex digits (either case) as 32 bytes; anything else `None`.
fn decode_hex_32(hex: &str) -> Option<[u8; 32]> {
    let digits = hex.as_bytes();
    if digits.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let high = char::from(pair[0]).to_digit(16)?;
        let low = char::from(pair[1]).to_digit(16)?;
        *byte = u8::try_from((high << 4) | low).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests;
