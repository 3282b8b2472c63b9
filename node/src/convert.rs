//! Argument checks and the one converter from `pidguard::Error` to a JavaScript `Error`.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use napi::bindgen_prelude::*;
use napi::{Env, JsValue, Status, Task, ValueType};

/// A path as JavaScript gives it: a string, or a `Buffer` of raw bytes (any byte but NUL).
pub type PathArg = Either<String, Buffer>;

pub fn path(p: &PathArg) -> PathBuf {
    match p {
        Either::A(s) => PathBuf::from(s),
        Either::B(b) => PathBuf::from(OsStr::from_bytes(b)),
    }
}

/// `PIDGUARD_` + the kind's slug in upper snake case (`no-such-process` → `PIDGUARD_NO_SUCH_PROCESS`).
pub fn code_of(kind: pidguard::ErrorKind) -> String {
    format!("PIDGUARD_{}", kind.slug().to_ascii_uppercase().replace('-', "_"))
}

/// The one converter: a JavaScript `Error` (a `RangeError` for `PIDGUARD_INVALID_ARGUMENT`) whose `message` is core's (it names the path or pid),
/// with `code` (`PIDGUARD_<KIND>`), `kind` (the slug), and `errno`, `path`, `pid`, `refusal`
/// where the error carries them; `family` (the code of the broader kind, e.g.
/// `PIDGUARD_UNTRUSTED` for `PIDGUARD_SYMLINK`) when the kind refines another; `holder` (a
/// `guard.Verdict`: the holder's entry, verdict and reason) for `PIDGUARD_HELD`. The returned
/// `napi::Error` holds the object itself, so a throw or a Promise rejection hands exactly this
/// object to JavaScript.
pub fn js_error(env: &Env, e: &pidguard::Error) -> napi::Error {
    let build = || -> Result<napi::Error> {
        // An argument the call does not accept is a `RangeError`, as Node's own APIs throw for a
        // value outside what they take; every other kind is an `Error`.
        let mut obj = if e.kind() == pidguard::ErrorKind::InvalidArgument {
            napi::JsRangeError::from(napi::Error::new(Status::InvalidArg, e.message())).into_unknown(*env).coerce_to_object()?
        } else {
            env.create_error(napi::Error::new(Status::GenericFailure, e.message()))?
        };
        obj.set("code", code_of(e.kind()))?;
        obj.set("kind", e.kind().slug())?;
        if let Some(errno) = e.errno() {
            obj.set("errno", errno)?;
        }
        if let Some(p) = e.path() {
            obj.set("path", p.to_string_lossy().into_owned())?;
        }
        if let Some(pid) = e.pid() {
            obj.set("pid", pid)?;
        }
        if let Some(r) = e.refusal() {
            obj.set("refusal", r.as_str())?;
        }
        if e.kind().family() != e.kind() {
            obj.set("family", code_of(e.kind().family()))?;
        }
        if let Some(h) = e.holder() {
            obj.set("holder", crate::records::verdict(h.clone()))?;
        }
        Ok(napi::Error::from_unknown_without_coercion(obj.to_unknown()))
    };
    build().unwrap_or_else(|x| x)
}

/// Throw a `TypeError`, or a `RangeError` for `ERR_OUT_OF_RANGE`, with Node's own `code`
/// (`ERR_INVALID_ARG_TYPE`, `ERR_INVALID_ARG_VALUE`, `ERR_OUT_OF_RANGE`), and return the error
/// that tells napi an exception is already pending.
fn arg_error(env: &Env, code: &str, msg: String) -> napi::Error {
    let thrown = if code == "ERR_OUT_OF_RANGE" {
        env.throw_range_error(&msg, Some(code))
    } else {
        env.throw_type_error(&msg, Some(code))
    };
    match thrown {
        Ok(()) => napi::Error::new(Status::PendingException, msg),
        Err(e) => e,
    }
}

fn type_name(t: ValueType) -> &'static str {
    match t {
        ValueType::Undefined => "undefined",
        ValueType::Null => "null",
        ValueType::Boolean => "boolean",
        ValueType::Number => "number",
        ValueType::String => "string",
        ValueType::Symbol => "symbol",
        ValueType::Object => "object",
        ValueType::Function => "function",
        ValueType::BigInt => "bigint",
        _ => "unknown",
    }
}

/// A JavaScript number, checked without coercion: anything else (a string such as
/// `"123; rm -rf /"`, a BigInt, an object with `valueOf`) is a `TypeError`.
pub fn number(env: &Env, v: &Unknown, name: &str) -> Result<f64> {
    let t = v.get_type()?;
    if t != ValueType::Number {
        return Err(arg_error(env, "ERR_INVALID_ARG_TYPE", format!("The \"{name}\" argument must be of type number. Received type {}", type_name(t))));
    }
    f64::from_unknown(*v)
}

/// A pid: an integer number in `1..=2^31-1`, checked before anything else happens. A non-number
/// is a `TypeError`; a fraction, NaN, infinity, zero, a negative number or one above `2^31-1` is
/// a `RangeError`. (napi's own i32 conversion would truncate 3.7 to 3 and wrap 2^32+1 to 1.)
/// Whether the pid is below `pid_max` or protected is core's decision.
pub fn pid(env: &Env, v: &Unknown, name: &str) -> Result<i32> {
    pid_number(env, number(env, v, name)?, name)
}

/// The range check of [`pid`] for a value napi already converted to a number (an object
/// member declared `number`).
pub fn pid_number(env: &Env, n: f64, name: &str) -> Result<i32> {
    // Which pids may be read or signalled is core's decision (1 to 4194304; pid <= 0 and pid 1
    // are refused before any system call); here only what a pid_t can hold.
    int(env, n, name, "an integer that fits a pid_t")
}

/// `n` as an `i32`; a fraction, NaN, an infinity or a number outside `i32` is a `RangeError`
/// ("It must be {what}").
fn int(env: &Env, n: f64, name: &str, what: &str) -> Result<i32> {
    if n.fract() != 0.0 || !(i32::MIN as f64..=i32::MAX as f64).contains(&n) {
        return Err(arg_error(env, "ERR_OUT_OF_RANGE", format!("The value of \"{name}\" is out of range. It must be {what}. Received {n}")));
    }
    Ok(n as i32)
}

/// An array of strings (an argv), checked without coercion: anything but an `Array` whose
/// every element is a string is a `TypeError` (`ERR_INVALID_ARG_TYPE`). Its length is core's to
/// judge (an empty argv is `PIDGUARD_INVALID_ARGUMENT`).
pub fn string_array(env: &Env, v: &Unknown, name: &str) -> Result<Vec<String>> {
    if !v.is_array()? {
        let t = type_name(v.get_type()?);
        return Err(arg_error(env, "ERR_INVALID_ARG_TYPE", format!("The \"{name}\" argument must be an array of strings. Received type {t}")));
    }
    let arr = Array::from_unknown(*v)?;
    let mut out = Vec::with_capacity(arr.len() as usize);
    for i in 0..arr.len() {
        let item: Option<Unknown> = arr.get(i)?;
        let t = match &item {
            Some(x) => x.get_type()?,
            None => ValueType::Undefined,
        };
        match item {
            Some(x) if t == ValueType::String => out.push(String::from_unknown(x)?),
            _ => {
                return Err(arg_error(env, "ERR_INVALID_ARG_TYPE", format!("The \"{name}[{i}]\" argument must be of type string. Received type {}", type_name(t))))
            }
        }
    }
    Ok(out)
}

/// A signal: a name (`'TERM'`, `'SIGKILL'`) or number string parsed by core, or an integer
/// number (`15`) checked by core (`PIDGUARD_INVALID_ARGUMENT` outside `1..=SIGRTMAX`). A
/// fraction is a `RangeError`; any other type a `TypeError`.
pub fn signal(env: &Env, v: &Unknown, name: &str) -> Result<pidguard::Signal> {
    let r = match v.get_type()? {
        ValueType::String => pidguard::Signal::parse(&String::from_unknown(*v)?),
        ValueType::Number => pidguard::Signal::from_number(int(env, f64::from_unknown(*v)?, name, "an integer")?),
        t => {
            return Err(arg_error(
                env,
                "ERR_INVALID_ARG_TYPE",
                format!("The \"{name}\" argument must be of type string or number. Received type {}", type_name(t)),
            ))
        }
    };
    r.map_err(|e| js_error(env, &e))
}

/// A time span in seconds: a finite number ≥ 0 (a `RangeError` otherwise).
pub fn duration(env: &Env, secs: f64, name: &str) -> Result<std::time::Duration> {
    std::time::Duration::try_from_secs_f64(secs).map_err(|_| {
        arg_error(env, "ERR_OUT_OF_RANGE", format!("The value of \"{name}\" is out of range. It must be a finite number >= 0. Received {secs}"))
    })
}

/// A start token string, parsed by core (`PIDGUARD_INVALID_ARGUMENT` when malformed).
pub fn token(env: &Env, s: &str) -> Result<pidguard::StartToken> {
    s.parse().map_err(|e| js_error(env, &e))
}

/// A schedule string in start-stop-daemon's `--retry` syntax, parsed by core.
pub fn schedule(env: &Env, s: &str) -> Result<pidguard::Schedule> {
    s.parse().map_err(|e| js_error(env, &e))
}

/// A `TypeError` with code `ERR_INVALID_ARG_VALUE` (conflicting or unknown option values).
pub fn invalid_value(env: &Env, msg: &str) -> napi::Error {
    arg_error(env, "ERR_INVALID_ARG_VALUE", msg.to_string())
}

/// A policy name parsed by core (`'strict'` or `'lenient'`; `None` is core's default). Core's
/// refusal of any other name is thrown as a `TypeError` (`ERR_INVALID_ARG_VALUE`), like the
/// other invalid option values.
pub fn policy(env: &Env, s: Option<&str>) -> Result<pidguard::Policy> {
    s.map_or(Ok(pidguard::Policy::default()), |s| s.parse().map_err(|e: pidguard::Error| invalid_value(env, e.message())))
}

/// Core's `TerminateOptions` with what JavaScript gave (`schedule` in `--retry` syntax, parsed
/// by core; `group`, `reap`); everything not given is core's default.
pub fn terminate_options(env: &Env, schedule: Option<&str>, group: Option<bool>, reap: Option<bool>) -> Result<pidguard::TerminateOptions> {
    let mut opts = pidguard::TerminateOptions::default();
    if let Some(s) = schedule {
        opts.schedule = self::schedule(env, s)?;
    }
    opts.group = group.unwrap_or(opts.group);
    opts.reap = reap.unwrap_or(opts.reap);
    Ok(opts)
}

/// One synchronous core call: [`no_panic`], its error through [`js_error`].
pub fn call<T>(env: &Env, f: impl FnOnce() -> pidguard::Result<T>) -> Result<T> {
    no_panic(f).map_err(|e| js_error(env, &e))
}

/// One core call run on libuv's thread pool (the work of every `Promise` this addon returns):
/// the closure runs there under [`no_panic`], and its answer resolves the `Promise` or its
/// error (through [`js_error`]) rejects it.
pub struct CoreTask<V> {
    work: Option<Box<dyn FnOnce() -> pidguard::Result<V> + Send>>,
}

/// `work` as an [`AsyncTask`]: a `Promise` of its answer.
pub fn task<V>(work: impl FnOnce() -> pidguard::Result<V> + Send + 'static) -> AsyncTask<CoreTask<V>>
where
    CoreTask<V>: Task,
{
    AsyncTask::new(CoreTask { work: Some(Box::new(work)) })
}

impl<V: Send + 'static + ToNapiValue + TypeName> Task for CoreTask<V> {
    type Output = pidguard::Result<V>;
    type JsValue = V;

    fn compute(&mut self) -> Result<Self::Output> {
        // Unreachable: napi calls `compute` once per task, and nothing else takes `work`.
        Ok(no_panic(|| (self.work.take().expect("a task computes once"))()))
    }

    fn resolve(&mut self, env: Env, output: Self::Output) -> Result<V> {
        output.map_err(|e| js_error(&env, &e))
    }
}

/// Run one core call, turning a panic (a bug in pidguard) into a `Panic` error, so that it
/// reaches JavaScript as `PIDGUARD_PANIC` — as the C and Python boundaries do — instead of
/// aborting the Node process.
pub fn no_panic<T>(f: impl FnOnce() -> pidguard::Result<T>) -> pidguard::Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".to_string());
        Err(pidguard::Error::new(pidguard::ErrorKind::Panic, format!("pidguard bug: a panic was caught at the Node boundary: {what}")))
    })
}

/// A number option that may also be `null`: `null` and a missing key both leave the option to
/// core's default (`undefined` never reaches here: napi makes it `None`).
pub type Seconds = Either<f64, Null>;

/// The number of a [`Seconds`] option, or `None` for `null` or a missing key.
pub fn given(v: Option<Seconds>) -> Option<f64> {
    match v {
        Some(Either::A(n)) => Some(n),
        _ => None,
    }
}
