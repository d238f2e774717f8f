use super::with_client_timeouts;

const ADDED: &str = "connect_timeout=2&keepalives=1&keepalives_idle=2\
                     &keepalives_interval=1&keepalives_count=2&tcp_user_timeout=2000";

#[test]
fn client_timeouts_are_added_unless_set() {
    assert_eq!(
        with_client_timeouts("postgres://u@h/db"),
        format!("postgres://u@h/db?{ADDED}")
    );
    assert_eq!(
        with_client_timeouts("postgres://u@h/db?sslmode=disable"),
        format!("postgres://u@h/db?sslmode=disable&{ADDED}")
    );
    assert_eq!(
        with_client_timeouts(
            "postgres://u@h/db?connect_timeout=9&keepalives_idle=30&tcp_user_timeout=0"
        ),
        "postgres://u@h/db?connect_timeout=9&keepalives_idle=30&tcp_user_timeout=0\
         &keepalives=1&keepalives_interval=1&keepalives_count=2"
    );
    assert_eq!(
        with_client_timeouts("host=h dbname=db keepalives=0"),
        "host=h dbname=db keepalives=0 connect_timeout=2 keepalives_idle=2 \
         keepalives_interval=1 keepalives_count=2 tcp_user_timeout=2000"
    );
}
