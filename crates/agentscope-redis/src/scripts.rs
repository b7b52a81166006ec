//! The Lua scripts: each store operation is one script, run atomically by Redis (no other
//! command runs while a script does), sent with `EVALSHA` and loaded on `NOSCRIPT`.
//!
//! Scripts treat every stored value as an opaque string: they never decode JSON (Lua's
//! numbers would round 64-bit integers) and compare revisions as decimal strings, which the
//! store always writes in canonical form.
//!
//! Keys (see the crate docs): `KEYS[1]` the session's state hash, `KEYS[2]` its message
//! list, `KEYS[3]` its lease, `KEYS[4]` its interrupt flag, `KEYS[5]` the prefix's index (a
//! sorted set; absent in cluster mode, where it would live in another hash slot). The lease
//! scripts take the lease and the flag as `KEYS[1]` and `KEYS[2]`.

use std::sync::LazyLock;

use redis::Script;

/// The fields of the state hash, in the order the load script returns them.
pub(crate) const STATE_FIELDS: [&str; 8] = [
    "revision",
    "version",
    "agent",
    "metadata",
    "running_tools",
    "hooks",
    "saved_at",
    "messages",
];

/// The index of the first appended message in the save script's `ARGV` (0-based here,
/// `ARGV[13]` in Lua).
pub(crate) const SAVE_FIXED_ARGS: usize = 12;

/// Save: compare-and-swap on the revision, then apply the change.
///
/// `ARGV`: 1 session id, 2 base revision, 3 new revision, 4 kept, 5 TTL in ms (`0`: none),
/// 6 format version, 7 agent, 8 metadata, 9 running tools, 10 hooks, 11 saved_at, 12 the
/// fence (the lease token the change is saved under, or empty), 13... the appended messages
/// (JSON each).
///
/// Returns `{1, new revision}`, `{0, stored revision, stored message count}` when the change
/// does not apply (a stale base, or more messages kept than are stored), or `{2}` when
/// another lease than the fence holds the session: nothing was written then.
pub(crate) static SAVE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local state, messages, lease, index = KEYS[1], KEYS[2], KEYS[3], KEYS[5]
if ARGV[12] ~= '' then
  local holder = redis.call('GET', lease)
  if holder and holder ~= ARGV[12] then
    return {2}
  end
end
local stored = redis.call('HGET', state, 'revision')
local exists = stored ~= false
local count = 0
if exists then
  count = redis.call('LLEN', messages)
else
  stored = '0'
end
local kept = tonumber(ARGV[4])
if stored ~= ARGV[2] or kept > count then
  return {0, stored, count}
end
-- Drop the messages the change does not keep (a new session: any leftover list).
if (not exists) or kept == 0 then
  redis.call('DEL', messages)
elseif kept < count then
  redis.call('LTRIM', messages, 0, kept - 1)
end
-- Append the new messages, in batches (Lua's unpack has a stack limit).
local last = #ARGV
local first = 13
while first <= last do
  local upto = math.min(first + 4999, last)
  redis.call('RPUSH', messages, unpack(ARGV, first, upto))
  first = upto + 1
end
redis.call('HSET', state,
  'revision', ARGV[3], 'version', ARGV[6], 'agent', ARGV[7], 'metadata', ARGV[8],
  'running_tools', ARGV[9], 'hooks', ARGV[10], 'saved_at', ARGV[11],
  'messages', string.format('%d', kept + last - 12))
local ttl = tonumber(ARGV[5])
local now = nil
if ttl > 0 or index then
  local time = redis.call('TIME')
  now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
local score = '+inf'
if ttl > 0 then
  local at = string.format('%.0f', now + ttl)
  redis.call('PEXPIREAT', state, at)
  redis.call('PEXPIREAT', messages, at)
  score = at
else
  redis.call('PERSIST', state)
  redis.call('PERSIST', messages)
end
if index then
  redis.call('ZADD', index, score, ARGV[1])
  -- Forget sessions that expired (their keys are gone or go at the next access).
  redis.call('ZREMRANGEBYSCORE', index, '-inf', '(' .. string.format('%.0f', now))
end
return {1, ARGV[3]}
",
    )
});

/// Load: the state hash's fields (in [`STATE_FIELDS`] order) and every message, or `nil`
/// for a session that does not exist. Writes nothing.
pub(crate) static LOAD: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
local fields = redis.call('HMGET', KEYS[1],
  'revision', 'version', 'agent', 'metadata', 'running_tools', 'hooks', 'saved_at', 'messages')
return {fields, redis.call('LRANGE', KEYS[2], 0, -1)}
",
    )
});

/// Delete: the state and the messages, and the index entry (`ARGV[1]`: the session id); a
/// lease and its flag stay (the call holding them ends on its own). Returns 1 if the
/// session existed, 0 otherwise.
pub(crate) static DELETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local existed = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
if KEYS[5] then
  redis.call('ZREM', KEYS[5], ARGV[1])
end
return existed
",
    )
});

/// List (standalone): the ids in the index (`KEYS[1]`) whose sessions have not expired at
/// the server's time. Writes nothing.
pub(crate) static LIST: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
return redis.call('ZRANGEBYSCORE', KEYS[1], string.format('%.0f', now), '+inf')
",
    )
});

/// Renew a lease (`KEYS[1]` the lease, `KEYS[2]` the interrupt flag; `ARGV[1]` the token,
/// `ARGV[2]` the lease's time to live in ms): extends it if the token holds it, takes it
/// again if it expired and nobody took it meanwhile.
///
/// Returns 1 (held), 2 (held, and interrupted: the flag holds the token) or 0 (another lease
/// holds the session: this one is lost).
pub(crate) static RENEW: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local holder = redis.call('GET', KEYS[1])
if holder == false then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
elseif holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
else
  return 0
end
if redis.call('GET', KEYS[2]) == ARGV[1] then
  return 2
end
return 1
",
    )
});

/// Release a lease (`KEYS[1]` the lease, `KEYS[2]` the interrupt flag; `ARGV[1]` the token):
/// deletes both if the token holds them, touches nothing another lease holds. Returns 1 if
/// the lease was held.
pub(crate) static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[2]) == ARGV[1] then
  redis.call('DEL', KEYS[2])
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
",
    )
});

/// Interrupt (`KEYS[1]` the lease, `KEYS[2]` the interrupt flag; `ARGV[1]` the flag's time
/// to live in ms): marks the lease that holds the session as interrupted (its holder reads
/// the flag when it renews, in case it missed the message) and returns its token, or `nil`
/// when no lease holds the session.
pub(crate) static INTERRUPT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local holder = redis.call('GET', KEYS[1])
if holder == false then
  return false
end
redis.call('SET', KEYS[2], holder, 'PX', ARGV[1])
return holder
",
    )
});
