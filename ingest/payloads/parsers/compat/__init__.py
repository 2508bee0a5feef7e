"""Forks and patches of third-party parser internals (pdfminer), isolated here: see each module."""
