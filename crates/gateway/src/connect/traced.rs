//! A Streamable HTTP client that copies the trace context a request carries in its `_meta`
//! (SEP-414) into the W3C `traceparent` / `tracestate` headers, for the servers, proxies
//! and load balancers that read headers rather than the body.

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, GetMeta, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

/// `C` with trace headers on every request whose `_meta` holds a trace context.
#[derive(Clone, Debug)]
pub(crate) struct Traced<C>(pub(crate) C);

/// `headers` plus the request's own trace context, when it has one.
fn with_trace(
    message: &ClientJsonRpcMessage,
    mut headers: HashMap<HeaderName, HeaderValue>,
) -> HashMap<HeaderName, HeaderValue> {
    let JsonRpcMessage::Request(request) = message else {
        return headers;
    };
    let meta = request.request.get_meta();
    for (key, value) in [
        ("traceparent", meta.get_traceparent()),
        ("tracestate", meta.get_tracestate()),
    ] {
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(HeaderName::from_static(key), value);
        }
    }
    headers
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Traced<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_trace(&message, custom_headers);
        self.0
            .post_message(uri, message, session_id, auth_header, headers)
            .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_trace(&message, custom_headers);
        self.0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                max_sse_event_size,
            )
            .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let headers = with_trace(&message, custom_headers);
        self.0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                headers,
                limits,
            )
            .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{ClientRequest, JsonRpcRequest, PingRequest, RequestId};

    use super::*;

    #[test]
    fn a_request_with_a_trace_context_gets_its_headers_and_others_are_left_alone() {
        let parent = "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01";
        let mut request = ClientRequest::PingRequest(PingRequest::default());
        request.get_meta_mut().set_traceparent(parent);
        let message = JsonRpcMessage::Request(JsonRpcRequest::new(RequestId::Number(1), request));
        let headers = with_trace(&message, HashMap::new());
        assert_eq!(headers[&HeaderName::from_static("traceparent")], parent);
        assert!(!headers.contains_key("tracestate"));
        let plain = JsonRpcMessage::Request(JsonRpcRequest::new(
            RequestId::Number(2),
            ClientRequest::PingRequest(PingRequest::default()),
        ));
        assert!(with_trace(&plain, HashMap::new()).is_empty());
    }
}
