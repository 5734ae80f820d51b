//! The Kubernetes client's answers, bounded: a layer under kube-rs that refuses a list or get
//! answer past `[kube] max_body` bytes (at `Content-Length`, or as it is counted), and, on a
//! watch, any one event (one line) past the same limit, however long the watch runs. kube-rs
//! reads lists whole and watch lines without a length limit: this is what bounds them.

use crate::backend::bounds::show;
use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The default of `[kube] max_body`: 256 MiB for an answer or one watch event (the API server
/// itself stores no object over ~1.5 MiB, and lists come in pages).
pub const DEFAULT_MAX_BODY: u64 = 256 * crate::backend::bounds::MIB;

/// An answer refused for its size.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TooLarge {
    #[error("Kubernetes API answer of {} refused, over the limit of {} ([kube] max_body)", show(*declared), show(*limit))]
    Declared { declared: u64, limit: u64 },
    #[error("Kubernetes API answer refused after {} (the limit, [kube] max_body): larger, or endless", show(*limit))]
    Body { limit: u64 },
    #[error("Kubernetes watch event refused: longer than {} (the limit, [kube] max_body)", show(*limit))]
    Event { limit: u64 },
}

/// Wraps every answer's body in a [`Bounded`] body.
#[derive(Debug, Clone, Copy)]
pub struct BoundLayer {
    pub limit: u64,
}

impl<S> tower_layer::Layer<S> for BoundLayer {
    type Service = BoundService<S>;
    fn layer(&self, inner: S) -> BoundService<S> {
        BoundService { inner, limit: self.limit }
    }
}

#[derive(Debug, Clone)]
pub struct BoundService<S> {
    inner: S,
    limit: u64,
}

fn is_watch(uri: &http::Uri) -> bool {
    uri.query().is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"))
}

impl<S, ReqB, B> tower_service::Service<http::Request<ReqB>> for BoundService<S>
where
    S: tower_service::Service<http::Request<ReqB>, Response = http::Response<B>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<Bounded<B>>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<ReqB>) -> Self::Future {
        let (limit, watch) = (self.limit, is_watch(req.uri()));
        let f = self.inner.call(req);
        Box::pin(async move {
            let resp = f.await?;
            let declared = resp
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
            Ok(resp.map(|inner| Bounded { inner, limit, watch, count: 0, declared }))
        })
    }
}

/// A body refused past `limit` bytes in all, or, on a watch, past `limit` bytes in one line.
pub struct Bounded<B> {
    inner: B,
    limit: u64,
    watch: bool,
    /// Bytes so far (of the current line, on a watch).
    count: u64,
    declared: Option<u64>,
}

impl<B> Bounded<B> {
    fn check(&mut self, data: &[u8]) -> Result<(), TooLarge> {
        let limit = self.limit;
        if !self.watch {
            self.count += data.len() as u64;
            return if self.count > limit { Err(TooLarge::Body { limit }) } else { Ok(()) };
        }
        let mut from = 0;
        for nl in memchr::memchr_iter(b'\n', data) {
            if self.count + (nl - from) as u64 > limit {
                return Err(TooLarge::Event { limit });
            }
            self.count = 0;
            from = nl + 1;
        }
        self.count += (data.len() - from) as u64;
        if self.count > limit { Err(TooLarge::Event { limit }) } else { Ok(()) }
    }
}

impl<B> Body for Bounded<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if !this.watch
            && let Some(d) = this.declared.filter(|d| *d > this.limit)
        {
            this.declared = None;
            this.count = u64::MAX;
            return Poll::Ready(Some(Err(Box::new(TooLarge::Declared { declared: d, limit: this.limit }))));
        }
        if this.count == u64::MAX {
            return Poll::Ready(None);
        }
        match ready!(Pin::new(&mut this.inner).poll_frame(cx)) {
            Some(Ok(f)) => {
                if let Some(d) = f.data_ref()
                    && let Err(e) = this.check(d)
                {
                    this.count = u64::MAX;
                    return Poll::Ready(Some(Err(Box::new(e))));
                }
                Poll::Ready(Some(Ok(f)))
            }
            Some(Err(e)) => Poll::Ready(Some(Err(e.into()))),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.count == u64::MAX || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A kube-rs client for `config` with its answers bounded by `limit`.
pub fn client(config: kube::Config, limit: u64) -> Result<kube::Client, kube::Error> {
    Ok(kube::client::ClientBuilder::try_from(config)?.with_layer(&BoundLayer { limit }).build())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(watch: bool, limit: u64) -> Bounded<()> {
        Bounded { inner: (), limit, watch, count: 0, declared: None }
    }

    #[test]
    fn a_watch_bounds_each_line_a_list_the_whole() {
        let mut w = body(true, 10);
        for chunk in ["0123456789\n", "01234", "56789\n0123456789\n", "\n\n"] {
            assert_eq!(w.check(chunk.as_bytes()), Ok(()), "{chunk:?}");
        }
        assert_eq!(w.check(b"01234"), Ok(()));
        assert_eq!(w.check(b"567890\n"), Err(TooLarge::Event { limit: 10 }));
        let mut l = body(false, 10);
        assert_eq!(l.check(b"0123\n"), Ok(()));
        assert_eq!(l.check(b"0123\n"), Ok(()));
        assert_eq!(l.check(b"0"), Err(TooLarge::Body { limit: 10 }));
        assert!(is_watch(&"/api/v1/pods?&watch=true&timeoutSeconds=290".parse().unwrap()));
        assert!(!is_watch(&"/api/v1/pods?limit=500".parse().unwrap()));
    }
}
