//! Who gets past Connect: the host's secrets looked up at Connect, the
//! Authentication Send / Receive commands fed to the queue's
//! [`ControllerChap`], and every other command refused with
//! Authentication Required until the queue has authenticated. A failed
//! exchange is logged and counted and its AUTH_Failure1 delivered; the
//! connection is closed at its next command.

use std::sync::atomic::Ordering;

use proto::fabrics::{self, FCTYPE_AUTH_RECEIVE, FCTYPE_AUTH_SEND, FCTYPE_CONNECT, FabricsCmd};
use proto::{Sqe, Status};

use super::conn::{Conn, Payload, Stop};
use crate::auth::ControllerChap;
use crate::auth::controller::Step;

impl Conn {
    /// At Connect: the queue's exchange if its host must authenticate,
    /// `Err` if the host may not connect at all (not in the secrets
    /// file). Discovery controllers do not authenticate.
    pub(crate) fn authenticator(
        &self,
        hostnqn: &str,
        discovery: bool,
    ) -> Result<Option<ControllerChap>, ()> {
        let Some(auth) = &self.shared.cfg.auth else {
            return Ok(None);
        };
        if discovery {
            return Ok(None);
        }
        match auth.hosts.get(hostnqn) {
            Some(secrets) => Ok(Some(ControllerChap::new(
                hostnqn,
                &self.shared.cfg.nqn,
                secrets,
                auth.policy.clone(),
            ))),
            None => {
                self.shared
                    .stats
                    .refused_hosts
                    .fetch_add(1, Ordering::Relaxed);
                self.shared.log(format_args!(
                    "{}: host {hostnqn} refused: no secret for it in the secrets file",
                    self.peer
                ));
                Err(())
            }
        }
    }

    /// Whether `sqe` may run on this queue now; if not, it was answered
    /// with Authentication Required. A queue whose exchange failed (its
    /// AUTH_Failure1 delivered) is closed at its next command.
    pub(crate) fn may_run(&self, sqe: &Sqe) -> Result<bool, Stop> {
        let Some(chap) = &self.chap else {
            return Ok(true);
        };
        if chap.failed() {
            return Err(Stop::Clean);
        }
        if chap.authenticated() {
            return Ok(true);
        }
        if sqe.opcode() == fabrics::OPCODE
            && matches!(
                FabricsCmd::fctype(sqe),
                FCTYPE_CONNECT | FCTYPE_AUTH_SEND | FCTYPE_AUTH_RECEIVE
            )
        {
            return Ok(true);
        }
        self.shared
            .stats
            .auth_required
            .fetch_add(1, Ordering::Relaxed);
        self.status(sqe, fabrics::AUTHENTICATION_REQUIRED);
        Ok(false)
    }

    fn log_step(&self, step: &Step) {
        let host = self.hostnqn.as_deref().unwrap_or("?");
        let qid = self.qid.unwrap_or(0);
        match step {
            Step::Authenticated => {
                self.shared
                    .stats
                    .authentications
                    .fetch_add(1, Ordering::Relaxed);
                self.shared.log(format_args!(
                    "{}: {host} authenticated queue {qid} (DH-HMAC-CHAP)",
                    self.peer
                ));
            }
            Step::Refused(why) => {
                self.shared
                    .stats
                    .auth_failures
                    .fetch_add(1, Ordering::Relaxed);
                self.shared.log(format_args!(
                    "{}: {host} authentication refused on queue {qid}: {why}",
                    self.peer
                ));
            }
            Step::Continue | Step::Closed => {}
        }
    }

    /// Checks what both authentication commands carry.
    fn auth_fields(&self, sqe: &Sqe, secp: u8, spsp: [u8; 2], len: u32) -> bool {
        if self.chap.is_none()
            || secp != fabrics::SECP_AUTH
            || spsp != fabrics::SPSP_DHCHAP
            || len == 0
        {
            self.status(sqe, Status::INVALID_FIELD);
            return false;
        }
        true
    }

    /// Authentication Send.
    pub(crate) fn auth_send(
        &mut self,
        sqe: &Sqe,
        secp: u8,
        spsp: [u8; 2],
        tl: u32,
        payload: Payload,
    ) -> Result<(), Stop> {
        if !self.auth_fields(sqe, secp, spsp, tl) {
            return Ok(());
        }
        let Payload::Out(data) = payload else {
            self.status(sqe, Status::INVALID_FIELD);
            return Ok(());
        };
        if data.len() != tl as usize {
            self.status(sqe, Status::INVALID_FIELD);
            return Ok(());
        }
        let Some(chap) = self.chap.as_mut() else {
            return Ok(());
        };
        let step = chap.send(&data);
        self.log_step(&step);
        self.status(sqe, Status::SUCCESS);
        Ok(())
    }

    /// Authentication Receive.
    pub(crate) fn auth_receive(
        &mut self,
        sqe: &Sqe,
        secp: u8,
        spsp: [u8; 2],
        al: u32,
        payload: Payload,
    ) -> Result<(), Stop> {
        if !self.auth_fields(sqe, secp, spsp, al) {
            return Ok(());
        }
        if !matches!(payload, Payload::In(n) if n == al as usize) {
            self.status(sqe, Status::INVALID_FIELD);
            return Ok(());
        }
        let Some(chap) = self.chap.as_mut() else {
            return Ok(());
        };
        match chap.receive(al as usize) {
            Ok((msg, step)) => {
                self.log_step(&step);
                self.respond(sqe, Status::SUCCESS, 0, 0, msg);
            }
            Err(_) => self.status(sqe, Status::INVALID_FIELD),
        }
        Ok(())
    }
}
