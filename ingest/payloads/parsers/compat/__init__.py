"""Forks and patches of third-party parser internals (pdfminer, openpyxl), isolated here: see each module."""
