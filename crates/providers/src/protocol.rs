//! What a protocol module ([`crate::openai`], [`crate::anthropic`]) hands back to the
//! provider while it reads a response: a body it could not use, and whether a stream is done.

/// What went wrong reading a response body.
#[derive(Debug)]
pub(crate) enum ParseError {
    /// Not the protocol's shape.
    Invalid(String),
    /// An error event saying the service is overloaded or rate-limited: worth a retry.
    Overloaded(String),
    /// Another error event.
    Api(String),
}

/// Whether a stream has more to say.
pub(crate) enum Flow {
    More,
    Done,
}
