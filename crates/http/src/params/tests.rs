use super::*;
use confab_domain::{Field, MessageId};

fn form(s: &str) -> Params {
    Params::from_body(Some("application/x-www-form-urlencoded"), s.as_bytes()).expect("form")
}

fn json(s: &str) -> Params {
    Params::from_body(Some("application/json; charset=utf-8"), s.as_bytes()).expect("json")
}

const ID: &str = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";

#[test]
fn content_types() {
    assert!(Params::from_body(None, b"").is_ok());
    assert!(Params::from_body(Some("text/plain"), b"").is_ok());
    let e = Params::from_body(None, b"a=1").expect_err("no type");
    assert_eq!(e.code(), "unsupported_media_type");
    let e = Params::from_body(Some("text/plain"), b"a=1").expect_err("text");
    assert_eq!(e.code(), "unsupported_media_type");
    assert!(Params::from_body(
        Some("Application/X-WWW-Form-Urlencoded; charset=UTF-8"),
        b"a=1"
    )
    .is_ok());
    let e = Params::from_body(Some("application/json"), b"[]").expect_err("array");
    assert_eq!(e.code(), "body_invalid");
    let e =
        Params::from_body(Some("application/x-www-form-urlencoded"), b"a=1&a=2").expect_err("dup");
    assert_eq!((e.code(), e.param()), ("parameter_invalid", Some("a")));
}

#[test]
fn unknown_keys_are_refused_by_name() {
    let mut p = form("message=hi&id=x");
    assert_eq!(p.required_str("message").expect("message"), "hi");
    let e = p.finish().expect_err("unknown");
    assert_eq!((e.code(), e.param()), ("parameter_unknown", Some("id")));
    let mut p = json(r#"{"message": "hi", "created_at": 1}"#);
    p.required_str("message").expect("message");
    assert_eq!(p.finish().expect_err("unknown").param(), Some("created_at"));
    let mut p = form("message=hi");
    p.required_str("message").expect("message");
    assert!(p.finish().is_ok());
}

#[test]
fn unknown_keys_come_before_missing_ones() {
    let p = form("name=alice&username=x&colour=blue");
    let e = p.allow(|k| k == "username").expect_err("unknown");
    assert_eq!((e.code(), e.param()), ("parameter_unknown", Some("name")));
    assert!(form("username=x")
        .allow(|k| ["username", "limit"].contains(&k))
        .is_ok());
    let items = form("a[0][x]=1&a[0][y]=2")
        .optional_objects("a")
        .expect("ok")
        .expect("some");
    let e = items[0].allow(|k| k == "x").expect_err("nested");
    assert_eq!(e.param(), Some("a[0][y]"));
}

#[test]
fn missing_and_wrong_types() {
    let e = form("").required_str("message").expect_err("missing");
    assert_eq!(
        (e.code(), e.param()),
        ("parameter_missing", Some("message"))
    );
    let e = json(r#"{"message": 5}"#)
        .required_str("message")
        .expect_err("type");
    assert_eq!(
        (e.code(), e.param()),
        ("parameter_invalid", Some("message"))
    );
    let e = form("message[]=a")
        .required_str("message")
        .expect_err("type");
    assert_eq!(e.code(), "parameter_invalid");
}

#[test]
fn bools() {
    // Any letter case (docs/api.md "Requests and answers": Python's `requests` sends
    // `True`), or 1 and 0.
    for (s, want) in [
        ("true", true),
        ("1", true),
        ("false", false),
        ("0", false),
        ("TRUE", true),
        ("False", false),
    ] {
        assert_eq!(
            form(&format!("b={s}")).optional_bool("b").expect(s),
            Some(want)
        );
    }
    for s in ["yes", "", "2", "on", "truee", "01"] {
        let e = form(&format!("b={s}")).optional_bool("b").expect_err(s);
        assert_eq!((e.code(), e.param()), ("parameter_invalid", Some("b")));
    }
    assert_eq!(
        json(r#"{"b": true}"#).optional_bool("b").expect("json"),
        Some(true)
    );
    assert_eq!(
        json(r#"{"b": false}"#).optional_bool("b").expect("json"),
        Some(false)
    );
    // JSON has booleans: a string is refused; 1 and 0 are taken.
    for s in [r#""true""#, "2", "null", "1.0"] {
        assert!(
            json(&format!(r#"{{"b": {s}}}"#))
                .optional_bool("b")
                .is_err(),
            "{s}"
        );
    }
    assert_eq!(
        json(r#"{"b": 1}"#).optional_bool("b").expect("1"),
        Some(true)
    );
    assert_eq!(
        json(r#"{"b": 0}"#).optional_bool("b").expect("0"),
        Some(false)
    );
    assert_eq!(form("").optional_bool("b").expect("absent"), None);
}

#[test]
fn ints() {
    assert_eq!(form("n=-5").optional_int("n").expect("int"), Some(-5));
    assert!(form("n=5.0").optional_int("n").is_err());
    assert!(form("n=").optional_int("n").is_err());
    assert_eq!(json(r#"{"n": 7}"#).optional_int("n").expect("int"), Some(7));
    assert!(json(r#"{"n": 7.5}"#).optional_int("n").is_err());
    assert!(json(r#"{"n": "7"}"#).optional_int("n").is_err());
    assert_eq!(
        form("n=").optional_clearable_int("n").expect("clear"),
        Some(None)
    );
    assert_eq!(
        json(r#"{"n": null}"#)
            .optional_clearable_int("n")
            .expect("clear"),
        Some(None)
    );
    assert_eq!(
        form("n=12").optional_clearable_int("n").expect("set"),
        Some(Some(12))
    );
    assert!(form("n=x").optional_clearable_int("n").is_err());
}

#[test]
fn ids() {
    let got: Option<MessageId> = form(&format!("m={ID}"))
        .optional_id("m", Malformed::Invalid)
        .expect("id");
    assert_eq!(got.map(|m| m.to_string()).as_deref(), Some(ID));
    let e = form("m=nope")
        .optional_id::<MessageId>("m", Malformed::Invalid)
        .expect_err("bad");
    assert_eq!((e.code(), e.param()), ("parameter_invalid", Some("m")));
    let e = form("m=nope")
        .optional_id::<MessageId>("m", Malformed::NotFound)
        .expect_err("bad");
    assert_eq!((e.code(), e.param()), ("not_found", Some("m")));
    let e = form(&format!("m={}", ID.to_uppercase()))
        .optional_id::<MessageId>("m", Malformed::Invalid)
        .expect_err("uppercase");
    assert_eq!(e.code(), "parameter_invalid");
    let cleared = form("m=").optional_clearable_id::<MessageId>("m", Malformed::Invalid);
    assert_eq!(cleared.expect("clear"), Some(None));
    let list: Vec<MessageId> = form(&format!("l[]={ID}&l[]={ID}"))
        .id_list("l")
        .expect("list");
    assert_eq!(list.len(), 2);
    let e = form("l[]=x").id_list::<MessageId>("l").expect_err("bad");
    assert_eq!(e.param(), Some("l"));
    let e = form(&format!("l={ID}"))
        .id_list::<MessageId>("l")
        .expect_err("scalar");
    assert_eq!(e.param(), Some("l"));
}

#[test]
fn nested_objects_name_their_params() {
    let mut p = form("attachments[0][file_url]=u&attachments[1][filename]=f&attachments[1][x]=1");
    let mut items = p
        .optional_objects("attachments")
        .expect("objects")
        .expect("some");
    assert_eq!(items.len(), 2);
    let e = items[0].required_str("filename").expect_err("missing");
    assert_eq!(e.param(), Some("attachments[0][filename]"));
    let mut second = items.remove(1);
    second.required_str("filename").expect("filename");
    assert_eq!(
        second.finish().expect_err("unknown").param(),
        Some("attachments[1][x]")
    );
    let e = form("attachments[]=x")
        .optional_objects("attachments")
        .expect_err("strings");
    assert_eq!(e.param(), Some("attachments[0]"));
    let e = json(r#"{"attachments": {"file_url": "u"}}"#)
        .optional_objects("attachments")
        .expect_err("object");
    assert_eq!(e.param(), Some("attachments"));
    let domain = items[0].domain(DomainError::invalid(Field::FileUrl, "must be a URL"));
    assert_eq!(domain.param(), Some("attachments[0][file_url]"));
}

#[test]
fn named_lists_from_form_and_both_json_shapes() {
    let want = Some(vec![
        (
            "like".to_owned(),
            vec!["alice".to_owned(), "bob".to_owned()],
        ),
        ("heart".to_owned(), vec!["carol".to_owned()]),
    ]);
    let f = form("r[like][]=alice&r[heart][]=carol&r[like][]=bob")
        .optional_named_lists("r")
        .expect("form");
    assert_eq!(f, want);
    let j = json(r#"{"r": {"like": ["alice", "bob"], "heart": ["carol"]}}"#)
        .optional_named_lists("r")
        .expect("json object");
    assert_eq!(j, want);
    let j = json(r#"{"r": [{"like": ["alice", "bob"]}, {"heart": ["carol"]}]}"#)
        .optional_named_lists("r")
        .expect("json array");
    assert_eq!(j, want);
    for bad in ["r=like", "r[like]=alice", "r[]=like"] {
        let e = form(bad).optional_named_lists("r").expect_err(bad);
        assert_eq!(
            (e.code(), e.param()),
            ("parameter_invalid", Some("r")),
            "{bad}"
        );
    }
    for bad in [
        r#"{"r": {"like": "alice"}}"#,
        r#"{"r": {"like": [1]}}"#,
        r#"{"r": ["like"]}"#,
    ] {
        assert!(json(bad).optional_named_lists("r").is_err(), "{bad}");
    }
}

#[test]
fn json_and_form_are_read_alike() {
    let mut f = form("muted=true&limit=5&name=x");
    let mut j = json(r#"{"muted": true, "limit": 5, "name": "x"}"#);
    for p in [&mut f, &mut j] {
        assert_eq!(p.optional_bool("muted").expect("muted"), Some(true));
        assert_eq!(p.optional_int("limit").expect("limit"), Some(5));
        assert_eq!(p.optional_str("name").expect("name").as_deref(), Some("x"));
    }
    assert!(f.finish().is_ok() && j.finish().is_ok());
}
