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
