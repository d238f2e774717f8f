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
pub(crate) enum Ranged {
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
pub(crate) fn range(header: Option<&str>, size: u64) -> Ranged {
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
pub(crate) fn etag(sha256_hex: &str) -> String {
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
pub(crate) fn none_match(if_none_match: Option<&str>, etag: &str) -> bool {
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
pub(crate) fn inline(file_type: &str) -> bool {
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
pub(crate) fn disposition(filename: &str, inline: bool) -> String {
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
pub(crate) const LINK_VALID_SECS: i64 = 3600;

/// Links expire on multiples of this many seconds (see [`expiry`]).
const LINK_GRANULARITY_SECS: i64 = 300;

/// The shortest key a [`LinkSigner`] takes, in bytes (256 bits, the
/// strength of HMAC-SHA256).
pub(crate) const LINK_KEY_MIN_BYTES: usize = 32;

/// The `expires` of a link minted at `now` (unix seconds): `now +
/// LINK_VALID_SECS` rounded down to a multiple of 5 minutes.
///
/// All the links to one attachment minted within the same 5 minutes are
/// then the same URL, so that the clients' and proxies' caches keep one
/// copy of the content, and a page listing the same messages twice
/// renders the same links. Such a link is valid for more than 55 and at
/// most 60 minutes, never longer than the hour the docs promise.
pub(crate) fn expiry(now: i64) -> i64 {
    now.saturating_add(LINK_VALID_SECS)
        .div_euclid(LINK_GRANULARITY_SECS)
        .saturating_mul(LINK_GRANULARITY_SECS)
}

/// Signs and verifies the links that open an attachment's content without
/// a token: `...?expires=<unix seconds>&signature=<hex>`, the signature
/// being HMAC-SHA256 over `"<hyphenated id>.<expires>"` with a key of the
/// server's.
#[derive(Clone)]
pub(crate) struct LinkSigner {
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
    pub(crate) fn new(key: Vec<u8>) -> Self {
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
    pub(crate) fn sign(&self, id: Uuid, expires: i64) -> String {
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
    pub(crate) fn verify(&self, id: Uuid, expires: i64, signature: &str, now: i64) -> bool {
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
mod tests {
    use super::*;

    #[test]
    fn no_range_is_whole() {
        assert_eq!(range(None, 100), Ranged::Whole);
    }

    #[test]
    fn single_ranges() {
        let part = |start, end| Ranged::Part { start, end };
        assert_eq!(range(Some("bytes=0-0"), 100), part(0, 1));
        assert_eq!(range(Some("bytes=0-99"), 100), part(0, 100));
        assert_eq!(range(Some("bytes=0-99"), 50), part(0, 50));
        assert_eq!(range(Some("bytes=10-19"), 50), part(10, 20));
        assert_eq!(range(Some("bytes=49-49"), 50), part(49, 50));
        assert_eq!(range(Some("bytes=-10"), 50), part(40, 50));
        assert_eq!(range(Some("bytes=-50"), 50), part(0, 50));
        assert_eq!(range(Some("bytes=-999"), 50), part(0, 50));
        assert_eq!(range(Some("bytes=10-"), 50), part(10, 50));
        assert_eq!(range(Some("bytes=0-"), 50), part(0, 50));
        assert_eq!(
            range(Some("bytes=0-18446744073709551615"), 50),
            Ranged::Whole,
            "20 digits are more than the bound"
        );
        assert_eq!(
            range(Some("bytes=0-9999999999999999999"), 50),
            part(0, 50),
            "19 digits fit"
        );
    }

    #[test]
    fn whitespace_and_case() {
        let part = |start, end| Ranged::Part { start, end };
        assert_eq!(range(Some("bytes = 0-4"), 50), part(0, 5));
        assert_eq!(range(Some(" Bytes=0-4 "), 50), part(0, 5));
        assert_eq!(range(Some("bytes=0-4, "), 50), part(0, 5));
        assert_eq!(range(Some("bytes=, 0-4"), 50), part(0, 5));
        assert_eq!(range(Some("bytes=0 - 4"), 50), Ranged::Whole);
    }

    #[test]
    fn unsatisfiable_ranges() {
        assert_eq!(range(Some("bytes=50-"), 50), Ranged::Unsatisfiable);
        assert_eq!(range(Some("bytes=50-60"), 50), Ranged::Unsatisfiable);
        assert_eq!(range(Some("bytes=100-200"), 50), Ranged::Unsatisfiable);
        assert_eq!(range(Some("bytes=-0"), 50), Ranged::Unsatisfiable);
    }

    #[test]
    fn ignored_ranges_are_whole() {
        for header in [
            "bytes=5-2",
            "items=0-1",
            "bytes=0-1,3-4",
            "bytes=0-1, 3-4",
            "bytes=",
            "bytes=-",
            "bytes",
            "bytes=abc",
            "bytes=1",
            "bytes=+1-2",
            "bytes=1-+2",
            "bytes=-+5",
            "bytes=0x1-2",
            "bytes=1-2-3",
            "bytes=--1",
            "bytes=123456789012345678901234567890-",
            "bytes=0-123456789012345678901234567890",
            "bytes=-123456789012345678901234567890",
            "bytes=٣-4",
            "",
        ] {
            assert_eq!(range(Some(header), 50), Ranged::Whole, "{header}");
        }
    }

    #[test]
    fn an_empty_file_is_whole() {
        for header in ["bytes=0-0", "bytes=0-", "bytes=-1", "bytes=-0", "bytes=5-9"] {
            assert_eq!(range(Some(header), 0), Ranged::Whole, "{header}");
        }
    }

    #[test]
    fn etags() {
        let tag = etag("abc123");
        assert_eq!(tag, "\"abc123\"");
        assert!(!none_match(None, &tag));
        assert!(none_match(Some("*"), &tag));
        assert!(none_match(Some(" * "), &tag));
        assert!(none_match(Some("\"abc123\""), &tag));
        assert!(none_match(Some("W/\"abc123\""), &tag));
        assert!(none_match(Some("\"x\", \"abc123\""), &tag));
        assert!(none_match(Some("\"x\",W/\"abc123\" ,\"y\""), &tag));
        assert!(
            none_match(Some("\"a,b\", \"abc123\""), &tag),
            "a comma in a tag"
        );
        assert!(!none_match(Some("\"abc12\""), &tag));
        assert!(
            !none_match(Some("\"ABC123\""), &tag),
            "octets compare exactly"
        );
        assert!(!none_match(Some("\"x\", \"y\""), &tag));
        assert!(!none_match(Some("abc123"), &tag), "unquoted");
        assert!(!none_match(Some(""), &tag));
        assert!(!none_match(Some("\"abc123"), &tag), "unterminated");
        assert!(
            !none_match(Some("w/\"abc123\""), &tag),
            "W/ is case-sensitive"
        );
        assert!(!none_match(Some("\"x\", *"), &tag), "* alone only");
    }

    #[test]
    fn inline_types() {
        for shown in [
            "image/png",
            "image/jpeg",
            "image/gif",
            "image/webp",
            "image/PNG",
            "IMAGE/Jpeg",
            "audio/mpeg",
            "audio/ogg",
            "video/mp4",
            "video/mp4; codecs=x",
            "Video/WebM",
        ] {
            assert!(inline(shown), "{shown}");
        }
        for downloaded in [
            "image/svg+xml",
            "image/svg",
            "text/html",
            "application/xhtml+xml",
            "text/xml",
            "application/pdf",
            "application/octet-stream",
            "text/plain",
            "image/bmp",
            "image/tiff",
            "image/png+xml",
            "audio/",
            "video",
            "",
            "image/png/x",
            "audio/mpeg x",
        ] {
            assert!(!inline(downloaded), "{downloaded}");
        }
    }

    #[test]
    fn dispositions() {
        assert_eq!(
            disposition("résumé \"1\".pdf", false),
            "attachment; filename=\"r_sum_ _1_.pdf\"; \
             filename*=UTF-8''r%C3%A9sum%C3%A9%20%221%22.pdf"
        );
        assert_eq!(
            disposition("cat.png", true),
            "inline; filename=\"cat.png\"; filename*=UTF-8''cat.png"
        );
        assert_eq!(
            disposition("a\\b\u{7}c%41\u{7f}.txt", false),
            "attachment; filename=\"a_b_c_41_.txt\"; \
             filename*=UTF-8''a%5Cb%07c%2541%7F.txt"
        );
        assert_eq!(
            disposition("日本.txt", false),
            "attachment; filename=\"__.txt\"; filename*=UTF-8''%E6%97%A5%E6%9C%AC.txt"
        );
        assert_eq!(
            disposition("x\r\ny: z;", false),
            "attachment; filename=\"x__y: z;\"; filename*=UTF-8''x%0D%0Ay%3A%20z%3B"
        );
        assert_eq!(disposition("", false), "attachment");
        assert_eq!(disposition("", true), "inline");
    }

    #[test]
    fn dispositions_are_header_values() {
        for name in ["résumé \"1\".pdf", "a\r\nb", "\u{0}\u{1b}[31m", "😀"] {
            let value = disposition(name, false);
            assert!(
                actix_web::http::header::HeaderValue::from_str(&value).is_ok(),
                "{value}"
            );
            assert!(value.bytes().all(|b| (0x20..0x7f).contains(&b)), "{value}");
        }
    }

    fn signer() -> LinkSigner {
        LinkSigner::new(b"0123456789abcdef0123456789abcdef".to_vec())
    }

    const ID: Uuid = Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0001);

    #[test]
    fn signatures_round_trip() {
        let signer = signer();
        let signature = signer.sign(ID, 1_000_000);
        assert_eq!(signature.len(), 64);
        assert!(signature
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
        assert!(signer.verify(ID, 1_000_000, &signature, 999_000));
        assert!(
            signer.verify(ID, 1_000_000, &signature, 1_000_000),
            "the last second"
        );
        assert_eq!(signature, signer.sign(ID, 1_000_000), "deterministic");
    }

    #[test]
    fn signatures_are_hmac_sha256_of_id_dot_expires() {
        let key = b"0123456789abcdef0123456789abcdef";
        let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("key");
        mac.update(format!("{}.{}", ID.hyphenated(), 1_000_000).as_bytes());
        let expected: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(signer().sign(ID, 1_000_000), expected);
    }

    #[test]
    fn altered_links_are_refused() {
        let signer = signer();
        let signature = signer.sign(ID, 1_000_000);
        let other = Uuid::from_u128(ID.as_u128() + 1);
        assert!(
            !signer.verify(other, 1_000_000, &signature, 0),
            "another id"
        );
        assert!(
            !signer.verify(ID, 1_000_300, &signature, 0),
            "a later expiry"
        );
        let mut flipped = signature.clone().into_bytes();
        flipped[10] = if flipped[10] == b'0' { b'1' } else { b'0' };
        let flipped = String::from_utf8(flipped).expect("ascii");
        assert!(
            !signer.verify(ID, 1_000_000, &flipped, 0),
            "another signature"
        );
        let other_key = LinkSigner::new(vec![7; 32]);
        assert!(
            !other_key.verify(ID, 1_000_000, &signature, 0),
            "another key"
        );
    }

    #[test]
    fn expired_links_are_refused() {
        let signer = signer();
        let signature = signer.sign(ID, 1_000_000);
        assert!(!signer.verify(ID, 1_000_000, &signature, 1_000_001));
    }

    #[test]
    fn malformed_signatures_are_refused() {
        let signer = signer();
        let signature = signer.sign(ID, 1_000_000);
        for bad in [
            String::new(),
            signature[..62].to_owned(),
            format!("{signature}00"),
            format!("{}zz", &signature[..62]),
            format!("{}+f", &signature[..62]),
            format!(" {}", &signature[..63]),
            "é".repeat(32),
        ] {
            assert!(!signer.verify(ID, 1_000_000, &bad, 0), "{bad}");
        }
    }

    #[test]
    fn upper_case_signatures_are_accepted() {
        let signer = signer();
        let signature = signer.sign(ID, 1_000_000).to_ascii_uppercase();
        assert!(signer.verify(ID, 1_000_000, &signature, 0));
    }

    #[test]
    #[should_panic(expected = "at least 32 bytes")]
    fn short_keys_are_refused() {
        let _ = LinkSigner::new(vec![1; 31]);
    }

    #[test]
    fn debug_hides_the_key() {
        assert_eq!(format!("{:?}", signer()), "LinkSigner { .. }");
    }

    #[test]
    fn expiries() {
        // On a multiple of 5 minutes: exactly one hour.
        assert_eq!(expiry(1_800_000_000), 1_800_000_000 + 3600);
        // Within the same 5 minutes: the same expiry, 55 to 60 minutes on.
        let base = 1_800_000_000;
        for now in base..base + 300 {
            let expires = expiry(now);
            assert_eq!(expires, base + 3600, "{now}");
            assert_eq!(expires % 300, 0);
            assert!(expires - now > 3300 && expires - now <= LINK_VALID_SECS);
        }
        assert_eq!(expiry(base + 300), base + 3900);
        assert_eq!(expiry(-3601), -300, "rounds toward the past");
        // No overflow at the extremes.
        assert_eq!(expiry(i64::MAX) % 300, 0);
        assert_eq!(expiry(i64::MIN) % 300, 0);
    }
}
