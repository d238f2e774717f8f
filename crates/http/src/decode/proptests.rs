//! Property tests: whatever bytes arrive, decoding answers (never panics)
//! with a value or one of the contract's 400s.

use super::*;
use crate::params::Params;
use proptest::prelude::*;

/// Form-ish text: the characters the decoder treats specially, so that
/// most cases reach deep into the key grammar and the tree.
fn formish() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("["),
            Just("]"),
            Just("%5B"),
            Just("%5D"),
            Just("%5b"),
            Just("[]"),
            Just("="),
            Just("&"),
            Just("+"),
            Just("%"),
            Just("%C3%A9"),
            Just("%FF"),
            Just("0"),
            Just("1"),
            Just("01"),
            Just("a"),
            Just("b"),
            Just("attachments"),
            Just("reactions"),
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

/// Arbitrary JSON with small keys, so that repeats and nesting happen.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| Value::Number(n.into())),
        // Exact binary fractions: serde_json's default float parsing may
        // round the last digit of others, which is not the decoder's doing.
        (-4000i32..4000).prop_map(|n| {
            Number::from_f64(f64::from(n) / 8.0).map_or(Value::Null, Value::Number)
        }),
        ".{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec(("[a-c]{1,2}", inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

fn contract_code(e: &DecodeError) -> &'static str {
    crate::error::ApiError::from(e.clone()).code()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn form_never_panics(input in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        formish().prop_map(String::into_bytes),
    ]) {
        match decode_form(&input) {
            Ok(map) => {
                // Decoding is a function of the input.
                prop_assert_eq!(decode_form(&input), Ok(map));
            }
            Err(e) => {
                let code = contract_code(&e);
                prop_assert!(code == "body_invalid" || code == "parameter_invalid", "{}", code);
                if let DecodeError::Param { param, .. } = &e {
                    prop_assert!(!param.is_empty());
                }
            }
        }
    }

    #[test]
    fn encoded_brackets_decode_like_raw(input in formish()) {
        // The same text with every bracket percent-encoded, in keys only
        // (a value's brackets are data either way).
        let encoded: String = input
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) => format!("{}={v}", k.replace('[', "%5B").replace(']', "%5D")),
                None => pair.replace('[', "%5B").replace(']', "%5D"),
            })
            .collect::<Vec<_>>()
            .join("&");
        prop_assert_eq!(decode_form(input.as_bytes()), decode_form(encoded.as_bytes()));
    }

    #[test]
    fn json_never_panics(input in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Err(e) = decode_json(&input) {
            prop_assert_eq!(contract_code(&e), "body_invalid");
        }
    }

    #[test]
    fn json_objects_come_back_whole(value in json_value()) {
        let text = value.to_string();
        match (&value, decode_json(text.as_bytes())) {
            (Value::Object(map), Ok(decoded)) => prop_assert_eq!(map, &decoded),
            (Value::Object(_), Err(e)) => prop_assert!(false, "{text}: {e:?}"),
            (_, result) => prop_assert!(result.is_err()),
        }
    }

    #[test]
    fn params_answer_with_contract_codes(
        body in prop::collection::vec(any::<u8>(), 0..128),
        query in formish(),
        content_type in prop::option::of(prop_oneof![
            Just("application/x-www-form-urlencoded"),
            Just("application/json"),
            Just("APPLICATION/JSON; charset=utf-8"),
            Just("text/plain"),
            Just(""),
        ]),
    ) {
        if let Err(e) = Params::from_body(content_type, &body) {
            let code = e.code();
            prop_assert!(
                ["body_invalid", "parameter_invalid", "unsupported_media_type"].contains(&code),
                "{}", code
            );
        }
        if let Err(e) = Params::from_query(&query) {
            prop_assert!(["body_invalid", "parameter_invalid"].contains(&e.code()));
        }
    }
}
