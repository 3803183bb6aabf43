-- SPDX-License-Identifier: Apache-2.0
-- 0009_review_resolve: an operator's decision on a payment in review
-- (issue 14, `chargeonce review resolve`) is recorded as evidence.
--
-- gateway_evidence.kind gets 'operator': the row written in the same
-- transaction as the resolution, whose actor names the person (worker.id
-- or user@host), whose request_summary holds the operator's --evidence
-- text (bounded, valid UTF-8, refused when it holds a card number) and
-- whose response_excerpt holds what the gateway answered when asked just
-- before (or that it was not asked: --without-gateway). Reusing 'query'
-- would make an operator's decision look like a gateway answer to anyone
-- reading the evidence, so a kind of its own.
ALTER TABLE gateway_evidence
        DROP CONSTRAINT gateway_evidence_kind_check,
        ADD CONSTRAINT gateway_evidence_kind_check
                CHECK (kind IN ('charge', 'query', 'webhook', 'operator'));

-- An operator's row always says who and why.
ALTER TABLE gateway_evidence
        ADD CONSTRAINT gateway_evidence_operator_who_why
                CHECK (kind <> 'operator'
                       OR (actor IS NOT NULL AND length(actor) > 0
                           AND request_summary IS NOT NULL
                           AND length(request_summary) > 0));
