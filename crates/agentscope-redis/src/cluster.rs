//! Listing the sessions of a cluster. A cluster has no session index (it would live in
//! another hash slot than the sessions, and no script may touch two slots), so the store
//! `SCAN`s every primary for the prefix's state hashes instead: a pass over the cluster's
//! keys. A reshard during the scan may yield a session twice (the caller removes
//! duplicates) but does not lose one that existed throughout.

use agentscope_core::session::SessionError;
use redis::Value;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};

use crate::error::config_error;
use crate::keys;

/// How many keys one `SCAN` step looks at when a cluster store lists sessions.
const SCAN_COUNT: usize = 1000;

/// The ids of `prefix`'s state hashes on every primary of the cluster, in no order and
/// possibly repeated; `fail` reports the Redis errors.
pub(crate) async fn session_ids(
    mut connection: ClusterConnection,
    prefix: &str,
    fail: impl Fn(redis::RedisError) -> SessionError,
) -> Result<Vec<String>, SessionError> {
    let slots = connection
        .route_command(
            redis::cmd("CLUSTER").arg("SLOTS").clone(),
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::Random),
        )
        .await
        .map_err(&fail)?;
    let primaries = primaries(&slots).ok_or_else(|| {
        config_error("listing sessions: CLUSTER SLOTS answered something unexpected")
    })?;
    let pattern = keys::state_key_pattern(prefix);
    let mut ids = Vec::new();
    for (host, port) in primaries {
        let mut cursor = String::from("0");
        loop {
            let mut scan = redis::cmd("SCAN");
            scan.arg(&cursor)
                .arg("MATCH")
                .arg(&pattern)
                .arg("COUNT")
                .arg(SCAN_COUNT)
                .arg("TYPE")
                .arg("hash");
            let reply = connection
                .route_command(
                    scan,
                    RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress {
                        host: host.clone(),
                        port,
                    }),
                )
                .await
                .map_err(&fail)?;
            let (next, found): (String, Vec<String>) =
                redis::from_redis_value(reply).map_err(|error| {
                    config_error(format!("listing sessions: SCAN answered: {error}"))
                })?;
            ids.extend(
                found
                    .iter()
                    .filter_map(|key| keys::session_of_state_key(prefix, key)),
            );
            cursor = next;
            if cursor == "0" {
                break;
            }
        }
    }
    Ok(ids)
}

/// The primaries' addresses in a `CLUSTER SLOTS` reply, without duplicates.
fn primaries(slots: &Value) -> Option<Vec<(String, u16)>> {
    let Value::Array(ranges) = slots else {
        return None;
    };
    let mut nodes = Vec::new();
    for range in ranges {
        let Value::Array(parts) = range else {
            return None;
        };
        let Some(Value::Array(primary)) = parts.get(2) else {
            return None;
        };
        let host = match primary.first()? {
            Value::BulkString(bytes) => String::from_utf8(bytes.clone()).ok()?,
            Value::SimpleString(text) => text.clone(),
            _ => return None,
        };
        let port = match primary.get(1)? {
            Value::Int(port) => u16::try_from(*port).ok()?,
            _ => return None,
        };
        if !nodes.contains(&(host.clone(), port)) {
            nodes.push((host, port));
        }
    }
    Some(nodes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn bulk(text: &str) -> Value {
        Value::BulkString(text.as_bytes().to_vec())
    }

    #[test]
    fn primaries_of_cluster_slots() {
        let node = |host: &str, port: i64| {
            Value::Array(vec![bulk(host), Value::Int(port), bulk("node-id")])
        };
        let range = |start: i64, end: i64, primary: Value, replica: Value| {
            Value::Array(vec![Value::Int(start), Value::Int(end), primary, replica])
        };
        let slots = Value::Array(vec![
            range(0, 5460, node("127.0.0.1", 7000), node("127.0.0.1", 7003)),
            range(
                5461,
                10922,
                node("127.0.0.1", 7001),
                node("127.0.0.1", 7004),
            ),
            range(
                10923,
                16000,
                node("127.0.0.1", 7002),
                node("127.0.0.1", 7005),
            ),
            range(
                16001,
                16383,
                node("127.0.0.1", 7000),
                node("127.0.0.1", 7003),
            ),
        ]);
        assert_eq!(
            primaries(&slots).unwrap(),
            [
                ("127.0.0.1".to_owned(), 7000),
                ("127.0.0.1".to_owned(), 7001),
                ("127.0.0.1".to_owned(), 7002)
            ]
        );
        assert_eq!(primaries(&Value::Okay), None);
    }
}
