//! The Lua scripts: each store operation is one script, run atomically by Redis (no other
//! command runs while a script does), sent with `EVALSHA` and loaded on `NOSCRIPT`.
//!
//! Scripts treat every stored value as an opaque string: they never decode JSON (Lua's
//! numbers would round 64-bit integers) and compare revisions as decimal strings, which the
//! store always writes in canonical form.
//!
//! Keys (see the crate docs): `KEYS[1]` the session's state hash, `KEYS[2]` its message
//! list, `KEYS[3]` its lease, `KEYS[4]` its interrupt flag, `KEYS[5]` the prefix's index (a
//! sorted set), `KEYS[6]` its recency index (a sorted set) and `KEYS[7]` the recency keys
//! (a hash) (the last three absent in cluster mode, where they would live in other hash
//! slots). The lease scripts take the lease and the flag as `KEYS[1]` and `KEYS[2]`.
//!
//! The recency index holds one member per session, `<recency key><id>` with score 0
//! ([`SessionSummary::recency_key`](agentscope_core::session::SessionSummary::recency_key):
//! 24 characters), so its lexical order is the order of `list_recent`; the recency keys
//! hash maps each id to its current key, so that a save, a delete or the pruning of an
//! expired session finds the member to remove.

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
/// `ARGV[14]` in Lua).
pub(crate) const SAVE_FIXED_ARGS: usize = 13;

/// The length of a recency key at the start of a recency index member.
pub(crate) const RECENCY_KEY_LEN: usize = 24;

/// Save: compare-and-swap on the revision, then apply the change.
///
/// `ARGV`: 1 session id, 2 base revision, 3 new revision, 4 kept, 5 TTL in ms (`0`: none),
/// 6 format version, 7 agent, 8 metadata, 9 running tools, 10 hooks, 11 saved_at, 12 the
/// fence (the lease token the change is saved under, or empty), 13 the recency key of
/// saved_at, 14... the appended messages (JSON each).
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
local first = 14
while first <= last do
  local upto = math.min(first + 4999, last)
  redis.call('RPUSH', messages, unpack(ARGV, first, upto))
  first = upto + 1
end
redis.call('HSET', state,
  'revision', ARGV[3], 'version', ARGV[6], 'agent', ARGV[7], 'metadata', ARGV[8],
  'running_tools', ARGV[9], 'hooks', ARGV[10], 'saved_at', ARGV[11],
  'messages', string.format('%d', kept + last - 13))
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
local recent, recent_keys = KEYS[6], KEYS[7]
if index then
  redis.call('ZADD', index, score, ARGV[1])
  -- Forget sessions that expired (their keys are gone or go at the next access), in the
  -- recency index too.
  local before = '(' .. string.format('%.0f', now)
  if recent then
    for _, gone in ipairs(redis.call('ZRANGEBYSCORE', index, '-inf', before)) do
      local key = redis.call('HGET', recent_keys, gone)
      if key then
        redis.call('ZREM', recent, key .. gone)
        redis.call('HDEL', recent_keys, gone)
      end
    end
  end
  redis.call('ZREMRANGEBYSCORE', index, '-inf', before)
end
if recent then
  local key = redis.call('HGET', recent_keys, ARGV[1])
  if key then
    redis.call('ZREM', recent, key .. ARGV[1])
  end
  redis.call('ZADD', recent, 0, ARGV[13] .. ARGV[1])
  redis.call('HSET', recent_keys, ARGV[1], ARGV[13])
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

/// Delete: the state and the messages, and the index and recency entries (`ARGV[1]`: the
/// session id); a lease and its flag stay (the call holding them ends on its own). Returns
/// 1 if the session existed, 0 otherwise.
pub(crate) static DELETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local existed = redis.call('EXISTS', KEYS[1])
redis.call('DEL', KEYS[1], KEYS[2])
if KEYS[5] then
  redis.call('ZREM', KEYS[5], ARGV[1])
end
if KEYS[6] then
  local key = redis.call('HGET', KEYS[7], ARGV[1])
  if key then
    redis.call('ZREM', KEYS[6], key .. ARGV[1])
    redis.call('HDEL', KEYS[7], ARGV[1])
  end
end
return existed
",
    )
});

/// A page of `list_recent` (standalone): `KEYS[1]` the recency index, `KEYS[2]` the recency
/// keys, `KEYS[3]` the prefix's index; `ARGV[1]` where to start (`-`, or `(` and the member
/// of the cursor), `ARGV[2]` how many sessions to find at most, `ARGV[3]` the id prefix,
/// `ARGV[4]` the key prefix, `ARGV[5]` how many members to look at at most.
///
/// Walks the recency index from the start in lexical order (newest first), keeping the
/// members whose id starts with the prefix and whose state hash exists (an expired session
/// waits in the index for a save to prune it). Reads only the state hashes of those, and
/// only `revision` and `saved_at`. Writes nothing.
///
/// Returns `{unkeyed, resume, found}`: `unkeyed` 1 when the prefix's index holds more
/// sessions than have recency keys (sessions saved by a version before the recency index:
/// key them first); `resume` the last member looked at when the walk stopped because it
/// looked at `ARGV[5]` members (go on after it), else `false`; `found` the sessions as
/// `member, revision, saved_at` triples, in order.
pub(crate) static LIST_RECENT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local recent, recent_keys, index = KEYS[1], KEYS[2], KEYS[3]
local start, wanted, prefix, keys = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local budget = tonumber(ARGV[5])
local unkeyed = 0
if redis.call('HLEN', recent_keys) < redis.call('ZCARD', index) then
  unkeyed = 1
end
local found, count, looked = {}, 0, 0
while count < wanted and looked < budget do
  local batch = math.min(budget - looked, math.max(wanted - count, 16))
  local members = redis.call('ZRANGEBYLEX', recent, start, '+', 'LIMIT', 0, batch)
  if #members == 0 then
    return {unkeyed, false, found}
  end
  for _, member in ipairs(members) do
    looked = looked + 1
    start = '(' .. member
    local id = string.sub(member, 25)
    if string.sub(id, 1, #prefix) == prefix then
      local fields = redis.call('HMGET', keys .. '{' .. id .. '}:state', 'revision', 'saved_at')
      if fields[1] then
        found[#found + 1] = member
        found[#found + 1] = fields[1]
        found[#found + 1] = fields[2]
        count = count + 1
        if count == wanted then
          return {unkeyed, false, found}
        end
      end
    end
  end
end
if count < wanted then
  return {unkeyed, string.sub(start, 2), found}
end
return {unkeyed, false, found}
",
    )
});

/// Keys one session saved before the recency index existed (standalone): `KEYS[1]` the
/// prefix's index, `KEYS[2]` the recency index, `KEYS[3]` the recency keys, `KEYS[4]` the
/// session's state hash; `ARGV[1]` the id, `ARGV[2]` the `saved_at` the key was made from
/// (empty: the state is gone), `ARGV[3]` the key. Adds the session to the recency index
/// only if the prefix's index lists it, it has no recency key yet, and its `saved_at` is
/// still `ARGV[2]`. Returns 1 if it added it.
pub(crate) static KEY_SESSION: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HEXISTS', KEYS[3], ARGV[1]) == 1 or not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  return 0
end
local saved = redis.call('HGET', KEYS[4], 'saved_at') or ''
if saved ~= ARGV[2] then
  return 0
end
redis.call('ZADD', KEYS[2], 0, ARGV[3] .. ARGV[1])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
return 1
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
