use super::*;
use serde_json::json;

fn form(s: &str) -> Result<Value, DecodeError> {
    decode_form(s.as_bytes()).map(Value::Object)
}

fn param_err(s: &str) -> String {
    match form(s) {
        Err(DecodeError::Param { param, .. }) => param,
        other => panic!("expected a param error for {s:?}, got {other:?}"),
    }
}

fn is_body_err(s: &str) -> bool {
    matches!(form(s), Err(DecodeError::Body(_)))
}

/// Percent-encodes everything but unreserved characters, as a client
/// that encodes brackets would.
fn encoded(pairs: &[(&str, &str)]) -> String {
    pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{}={}",
                form_urlencoded::byte_serialize(k.as_bytes()).collect::<String>(),
                form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>()
            )
        })
        .collect::<Vec<_>>()
        .join("&")
}

#[test]
fn hostile_nesting_is_a_body_error() {
    let deep = format!("a{}=1", "[b]".repeat(20_000));
    assert!(is_body_err(&deep));
    let eight = format!("a{}=1", "[b]".repeat(MAX_SEGMENTS - 1));
    assert!(form(&eight).is_ok());
    // JSON nesting is bounded by serde_json's own recursion limit.
    let json = format!("{{\"a\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(
        decode_json(json.as_bytes()),
        Err(DecodeError::Body(_))
    ));
}

#[test]
fn scalars_and_plus_and_percent() {
    assert_eq!(
        form("message=hello+world%21&conversation_id=abc&empty=&bare").expect("ok"),
        json!({"message": "hello world!", "conversation_id": "abc", "empty": "", "bare": ""})
    );
    assert_eq!(form("").expect("ok"), json!({}));
    assert_eq!(form("&&a=1&").expect("ok"), json!({"a": "1"}));
    assert_eq!(form("a=%C3%A9t%C3%A9").expect("ok"), json!({"a": "été"}));
    // `=` in a value is kept.
    assert_eq!(form("a=b=c").expect("ok"), json!({"a": "b=c"}));
}

#[test]
fn arrays_keep_order() {
    assert_eq!(
        form("contact_ids[]=b&contact_ids[]=a&contact_ids[]=b").expect("ok"),
        json!({"contact_ids": ["b", "a", "b"]})
    );
}

#[test]
fn objects_of_arrays_keep_insertion_order() {
    assert_eq!(
        form("reactions[like][]=alice&reactions[heart][]=carol&reactions[like][]=bob").expect("ok"),
        json!({"reactions": {"like": ["alice", "bob"], "heart": ["carol"]}})
    );
    let v = form("reactions[zz][]=a&reactions[aa][]=b").expect("ok");
    let keys: Vec<&String> = v["reactions"].as_object().expect("object").keys().collect();
    assert_eq!(keys, ["zz", "aa"]);
}

#[test]
fn indexed_arrays_of_objects() {
    assert_eq!(
        form("attachments[1][file_url]=u1&attachments[0][file_url]=u0&attachments[0][filename]=f0")
            .expect("ok"),
        json!({"attachments": [{"file_url": "u0", "filename": "f0"}, {"file_url": "u1"}]})
    );
    assert_eq!(
        param_err("attachments[0][a]=1&attachments[2][a]=1"),
        "attachments"
    );
    assert_eq!(param_err("attachments[1][a]=1"), "attachments");
    assert!(is_body_err("attachments[01][a]=1"));
    assert!(is_body_err("attachments[99999999999999999999999][a]=1"));
}

#[test]
fn percent_encoded_brackets_decode_the_same() {
    let pairs = [
        ("reactions[like][]", "alice"),
        ("attachments[0][file_url]", "https://x.example/a?b=c&d"),
        ("attachments[0][filename]", "a b.png"),
        ("contact_ids[]", "x"),
    ];
    let enc = encoded(&pairs);
    assert!(enc.contains("%5B") && !enc.contains('['), "{enc}");
    let raw = pairs
        .iter()
        .map(|(k, v)| {
            format!(
                "{k}={}",
                form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>()
            )
        })
        .collect::<Vec<_>>()
        .join("&");
    assert_eq!(form(&enc).expect("encoded"), form(&raw).expect("raw"));
    assert_eq!(
        form(&enc).expect("ok"),
        json!({"reactions": {"like": ["alice"]},
               "attachments": [{"file_url": "https://x.example/a?b=c&d", "filename": "a b.png"}],
               "contact_ids": ["x"]})
    );
    // Lowercase hex works too.
    assert_eq!(form("a%5b%5d=1").expect("ok"), json!({"a": ["1"]}));
}

#[test]
fn duplicates_and_conflicts_name_the_param() {
    assert_eq!(param_err("message=a&message=b"), "message");
    assert_eq!(param_err("a=1&a[]=2"), "a");
    assert_eq!(param_err("a[]=1&a=2"), "a");
    assert_eq!(param_err("a[x]=1&a[]=2"), "a");
    assert_eq!(param_err("a[0][x]=1&a[x]=2"), "a");
    assert_eq!(
        param_err("reactions[like]=a&reactions[like][]=b"),
        "reactions[like]"
    );
    assert_eq!(
        param_err("attachments[0][filename]=a&attachments[0][filename]=b"),
        "attachments[0][filename]"
    );
}

#[test]
fn bad_syntax_is_a_body_error() {
    for bad in [
        "=1",
        "[a]=1",
        "a]=1",
        "a[=1",
        "a[b=1",
        "a[b]c=1",
        "a[b][=1",
        "a[[b]]=1",
        "a[][x]=1",
        "a[][]=1",
        "a=%",
        "a=%4",
        "a=%zz",
        "%5Ba%5D=1",
    ] {
        assert!(
            is_body_err(bad),
            "{bad:?} should be a body error, got {:?}",
            form(bad)
        );
    }
}

#[test]
fn invalid_utf8_is_a_body_error() {
    assert!(is_body_err("a=%FF"));
    assert!(is_body_err("a=%C3"));
    assert!(matches!(decode_form(b"a=\xff"), Err(DecodeError::Body(_))));
}

#[test]
fn invalid_utf8_in_a_query_string_names_its_parameter() {
    // A value that is not UTF-8: the parameter it is the value of.
    for bad in [&b"a=%FF"[..], b"a=%C3", b"a=\xff", b"x=1&a=ok%FF"] {
        match decode_query(bad) {
            Err(DecodeError::Param { param, message }) => {
                assert_eq!(param, "a");
                assert!(message.contains("UTF-8"), "{message}");
            }
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    // A key that is not, or a value without a key: as in a body.
    for bad in [&b"%FF=a"[..], b"=%FF", b"\xff=1", b"a=%zz"] {
        assert!(
            matches!(decode_query(bad), Err(DecodeError::Body(_))),
            "{bad:?}: {:?}",
            decode_query(bad)
        );
    }
    // Otherwise the same as a body.
    assert_eq!(decode_query(b"a=1&b[]=2"), decode_form(b"a=1&b[]=2"));
}

#[test]
fn json_must_be_an_object_without_repeated_keys() {
    assert_eq!(
        Value::Object(
            decode_json(br#"{"a": 1, "b": [true, null, 1.5], "c": {"d": "e"}}"#).expect("ok")
        ),
        json!({"a": 1, "b": [true, null, 1.5], "c": {"d": "e"}})
    );
    for bad in [
        &b"[1]"[..],
        b"\"x\"",
        b"1",
        b"null",
        b"{",
        b"{\"a\":1}x",
        b"{\"a\":\"\xff\"}",
    ] {
        assert!(
            matches!(decode_json(bad), Err(DecodeError::Body(_))),
            "{bad:?}"
        );
    }
    assert!(matches!(
        decode_json(br#"{"a": 1, "a": 2}"#),
        Err(DecodeError::Body(m)) if m.contains("duplicate key")
    ));
    assert!(matches!(
        decode_json(br#"{"x": {"a": 1, "a": 2}}"#),
        Err(DecodeError::Body(_))
    ));
}

#[test]
fn objects_wider_than_the_api_takes_are_refused_at_once() {
    let keys = |n: usize, f: &dyn Fn(usize) -> String| (0..n).map(f).collect::<Vec<_>>().join("&");
    // At the bound: decoded. One more distinct key or index: body_invalid.
    for n in [MAX_KEYS, MAX_KEYS + 1] {
        let shapes = [
            keys(n, &|i| format!("k{i}=v")),
            keys(n, &|i| format!("a[k{i}]=v")),
            keys(n, &|i| format!("a[{i}][x]=v")),
        ];
        for body in shapes {
            let got = form(&body);
            if n == MAX_KEYS {
                assert!(got.is_ok(), "{n}: {got:?}");
            } else {
                assert!(
                    matches!(&got, Err(DecodeError::Body(m)) if m.contains("more than 256")),
                    "{n}: {got:?}"
                );
            }
        }
        let json = format!(
            "{{{}}}",
            (0..n)
                .map(|i| format!("\"k{i}\": 1"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(decode_json(json.as_bytes()).is_ok(), n == MAX_KEYS);
    }
    // Repeating a key and long lists are not widening.
    assert!(form(&keys(2000, &|_| "a[]=v".to_owned())).is_ok());
}

#[test]
fn json_and_form_give_the_same_tree_for_strings() {
    let f = form(
        "message=hi&attachments[0][file_url]=u&attachments[0][filename]=f&reactions[like][]=alice",
    )
    .expect("form");
    let j = decode_json(
        br#"{"message": "hi", "attachments": [{"file_url": "u", "filename": "f"}], "reactions": {"like": ["alice"]}}"#,
    )
    .expect("json");
    assert_eq!(f, Value::Object(j));
}
