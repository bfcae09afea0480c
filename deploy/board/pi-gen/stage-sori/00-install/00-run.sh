#!/bin/bash -e
# pi-gen stage: a Raspberry Pi OS image that installs Sori from its bundle on first boot.
# Put sori-firstboot.sh, sori-firstboot.service and the bundle (sori-pi5.tar, made with
# `sori bundle --board pi5 -o sori-pi5.tar`) in files/, and add this stage after stage2
# in pi-gen's config: STAGE_LIST="stage0 stage1 stage2 stage-sori".
install -m 755 files/sori-firstboot.sh "${ROOTFS_DIR}/usr/local/sbin/sori-firstboot.sh"
install -m 644 files/sori-firstboot.service "${ROOTFS_DIR}/etc/systemd/system/"
install -d "${ROOTFS_DIR}/opt/sori"
install -m 644 files/sori-*.tar "${ROOTFS_DIR}/opt/sori/"
on_chroot << CHROOT
systemctl enable sori-firstboot.service
CHROOT
