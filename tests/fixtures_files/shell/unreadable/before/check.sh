#!/bin/bash
if [[ $DEVICE == cuda ]]; then echo gpu; fi
