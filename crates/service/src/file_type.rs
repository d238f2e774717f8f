//! An upload's type, from its first bytes (magic numbers), never from what
//! the client claims (docs/api.md "Files and attachments").
//!
//! What comes out is what the content is served with later, so it must
//! never be a type that a browser runs: HTML, SVG, XML (XSLT, XHTML),
//! JavaScript, CSS. Those answer `application/octet-stream`, like an
//! unknown type.

/// How many first bytes [`detect`] looks at: the caller reads up to this
/// many bytes of an upload (fewer when the file is shorter) and passes
/// them; more changes nothing.
pub const SNIFF_BYTES: usize = 8192;

/// What an unknown type, or one refused as active content, answers.
const UNKNOWN: &str = "application/octet-stream";

/// The MIME type (`type/subtype`, lower case, no parameters) of a file
/// whose first bytes are `head` (at most [`SNIFF_BYTES`] of them are
/// looked at), from its magic numbers; `application/octet-stream` when
/// unknown, and for any type a browser would render as active content
/// (see [`is_active`]).
#[must_use]
pub fn detect(head: &[u8]) -> &'static str {
    let head = &head[..head.len().min(SNIFF_BYTES)];
    match infer::get(head) {
        Some(kind) if !is_active(kind.mime_type()) => kind.mime_type(),
        _ => UNKNOWN,
    }
}

/// Whether content of type `mime` may run in a browser, or be pulled into
/// a page of ours as a script or style sheet, when served with that type.
///
/// The content is served from the API's own origin with the detected type
/// (and `X-Content-Type-Options: nosniff`, which makes the browser trust
/// that type). A user's HTML, SVG or XHTML, opened from such a link, would
/// run its scripts with the origin's cookies and storage (stored XSS);
/// XML can pull in an XSLT that turns it into HTML; with `nosniff`, a
/// `<script>` or `<link rel=stylesheet>` of ours accepts a response only
/// when its type is JavaScript or CSS, so those types would make an upload
/// usable as a script or style sheet from our origin. Flash ran with the
/// origin's rights in the plugins of old. None of that is needed to
/// download the file, so all of it answers `application/octet-stream`.
///
/// infer 0.22 (feature "alloc") answers three `text/*` types: `text/html`
/// (a leading `<html`, `<script`, `<!--`, ... tag), `text/xml` (a leading
/// `<?xml`, which covers most SVG files) and `text/x-shellscript` (a
/// leading `#!`, kept: browsers show it as text or download it); no
/// `image/svg+xml` (an `<svg` without a prolog is unknown) and no
/// JavaScript or CSS. The rule below is by family rather than by that
/// list, so that a newer infer (or a matcher added later) cannot let one
/// through.
fn is_active(mime: &str) -> bool {
    let essence = mime.split(';').next().unwrap_or(mime).trim();
    let essence = essence.to_ascii_lowercase();
    let Some((top, sub)) = essence.split_once('/') else {
        // Not `type/subtype`: not served as what it claims.
        return true;
    };
    matches!(
        essence.as_str(),
        "text/html" | "text/css" | "text/xsl" | "application/x-shockwave-flash"
    ) || sub == "xml"
        || sub.ends_with("+xml")
        || sub.contains("javascript")
        || sub.contains("ecmascript")
        || sub == "jscript"
        || (top == "text" && sub.contains("html"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn padded(head: &[u8]) -> Vec<u8> {
        let mut bytes = head.to_vec();
        bytes.resize(64, 0);
        bytes
    }

    #[test]
    fn images_are_detected() {
        assert_eq!(detect(&padded(b"\x89PNG\r\n\x1a\n")), "image/png");
        assert_eq!(detect(&padded(b"\xff\xd8\xff\xe0")), "image/jpeg");
        assert_eq!(detect(&padded(b"GIF89a")), "image/gif");
        assert_eq!(detect(&padded(b"RIFF\x24\0\0\0WEBPVP8 ")), "image/webp");
    }

    #[test]
    fn documents_archives_and_media_are_detected() {
        assert_eq!(detect(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"), "application/pdf");
        assert_eq!(detect(&padded(b"PK\x03\x04\x14\0\0\0")), "application/zip");
        assert_eq!(detect(&padded(b"ID3\x04\0\0")), "audio/mpeg");
        assert_eq!(detect(&padded(b"OggS\0\x02")), "audio/ogg");
        assert_eq!(
            detect(&padded(b"\0\0\0\x18ftypmp42\0\0\0\0mp42isom")),
            "video/mp4"
        );
    }

    #[test]
    fn unknown_and_empty_are_octet_stream() {
        assert_eq!(detect(b""), UNKNOWN);
        assert_eq!(detect(b"hello, this is a plain note\n"), UNKNOWN);
        assert_eq!(detect(b"just some words; nothing else"), UNKNOWN);
        assert_eq!(detect(&[0x13, 0x37, 0x00, 0x42, 0x99, 0x01]), UNKNOWN);
    }

    #[test]
    fn what_infer_answers_is_refused_here() {
        // The mapping below is what keeps these out, not infer.
        let infer_says = |bytes: &[u8]| infer::get(bytes).map(|kind| kind.mime_type());
        assert_eq!(infer_says(b"<!DOCTYPE html><html>"), Some("text/html"));
        assert_eq!(
            infer_says(b"<?xml version=\"1.0\"?><svg/>"),
            Some("text/xml")
        );
        assert_eq!(
            infer_says(b"FWS\x0a"),
            Some("application/x-shockwave-flash")
        );
        assert_eq!(
            infer_says(b"<svg xmlns=\"http://www.w3.org/2000/svg\"/>"),
            None
        );
    }

    #[test]
    fn html_is_never_answered() {
        for html in [
            &b"<!DOCTYPE html><html><body><script>alert(1)</script>"[..],
            b"<html>\n<head><title>x</title></head>",
            b"  \n<SCRIPT>alert(document.cookie)</SCRIPT>",
            b"<!-- comment --><p>hi</p>",
            b"<body onload=alert(1)>",
            b"<iframe src=x></iframe>",
        ] {
            assert_eq!(detect(html), UNKNOWN, "{}", String::from_utf8_lossy(html));
        }
    }

    #[test]
    fn svg_and_xml_are_never_answered() {
        for xml in [
            &b"<svg xmlns=\"http://www.w3.org/2000/svg\"><script>alert(1)</script></svg>"[..],
            b"<?xml version=\"1.0\"?><svg xmlns=\"http://www.w3.org/2000/svg\"/>",
            b"\xef\xbb\xbf<?xml version=\"1.0\"?><html xmlns=\"http://www.w3.org/1999/xhtml\"/>",
            b"<?xml version=\"1.0\"?><?xml-stylesheet type=\"text/xsl\" href=\"x.xsl\"?><a/>",
        ] {
            assert_eq!(detect(xml), UNKNOWN, "{}", String::from_utf8_lossy(xml));
        }
    }

    #[test]
    fn flash_is_never_answered() {
        assert_eq!(detect(&padded(b"FWS\x0a\x20\0\0\0")), UNKNOWN);
        assert_eq!(detect(&padded(b"CWS\x0a\x20\0\0\0")), UNKNOWN);
    }

    #[test]
    fn a_longer_head_changes_nothing() {
        let mut png = padded(b"\x89PNG\r\n\x1a\n");
        png.resize(SNIFF_BYTES * 2, 0xAB);
        assert_eq!(detect(&png), "image/png");
    }

    #[test]
    fn active_types_are_recognised_by_family() {
        for active in [
            "text/html",
            "TEXT/HTML; charset=utf-8",
            "text/xml",
            "application/xml",
            "image/svg+xml",
            "application/xhtml+xml",
            "application/xslt+xml",
            "text/xsl",
            "text/javascript",
            "application/javascript",
            "application/x-javascript",
            "text/ecmascript",
            "text/jscript",
            "text/css",
            "application/x-shockwave-flash",
            "not-a-mime-type",
        ] {
            assert!(is_active(active), "{active}");
        }
        for inert in [
            "image/png",
            "image/jpeg",
            "application/pdf",
            "application/zip",
            "audio/mpeg",
            "video/mp4",
            "text/x-shellscript",
            "application/octet-stream",
        ] {
            assert!(!is_active(inert), "{inert}");
        }
    }
}
